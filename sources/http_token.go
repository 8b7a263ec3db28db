package sources

import (
	"fmt"
	"os"
	"strings"
)

// ReadTokenFile reads a bearer token from path, without surrounding white space.
func ReadTokenFile(path string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading trigger token: %w", err)
	}
	token := []byte(strings.TrimSpace(string(data)))
	if len(token) == 0 {
		return nil, fmt.Errorf("trigger token file %s is empty", path)
	}
	return token, nil
}
