package sources

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
	kjson "sigs.k8s.io/json"
)

// Target names one object to reconcile.
type Target struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// DecodeTargets decodes a trigger body: one Target object or a non-empty list of them. It is
// strict (unknown, duplicate and wrongly-cased fields are errors) and checks that every
// namespace is a DNS-1123 label and every name a DNS-1123 subdomain. Error messages are short:
// they quote at most maxErrorLen bytes of the request.
func DecodeTargets(data []byte) ([]Target, error) {
	var targets []Target
	var strictErrs []error
	var err error
	list := false
	switch firstByte(data) {
	case '{':
		var t Target
		strictErrs, err = kjson.UnmarshalStrict(data, &t)
		targets = []Target{t}
	case '[':
		list = true
		strictErrs, err = kjson.UnmarshalStrict(data, &targets)
	default:
		return nil, errors.New(`body must be a JSON object {"namespace": "...", "name": "..."} or a list of them`)
	}
	if err != nil {
		return nil, fmt.Errorf("malformed JSON: %s", truncate(jsonError(err).Error()))
	}
	if len(strictErrs) > 0 {
		return nil, fmt.Errorf("malformed request: %s", truncate(strictErrs[0].Error()))
	}
	if len(targets) == 0 {
		return nil, errors.New("empty list: name at least one object")
	}
	for i, t := range targets {
		prefix := ""
		if list {
			prefix = fmt.Sprintf("[%d].", i)
		}
		if err := checkName(t.Namespace, validation.IsDNS1123Label); err != nil {
			return nil, fmt.Errorf("%snamespace: %w", prefix, err)
		}
		if err := checkName(t.Name, validation.IsDNS1123Subdomain); err != nil {
			return nil, fmt.Errorf("%sname: %w", prefix, err)
		}
	}
	return targets, nil
}

// checkName checks a required name with one of the validation functions, whose messages
// describe the rule without repeating the value.
func checkName(value string, valid func(string) []string) error {
	if value == "" {
		return errors.New("required")
	}
	if msgs := valid(value); len(msgs) > 0 {
		return errors.New(strings.Join(msgs, "; "))
	}
	return nil
}

// maxErrorLen bounds the part of an error message that may quote the request.
const maxErrorLen = 200

func truncate(s string) string {
	if len(s) <= maxErrorLen {
		return s
	}
	return s[:maxErrorLen] + "..."
}

// jsonError keeps the decoder's message but drops the Go type names some errors carry.
func jsonError(err error) error {
	var typeErr *json.UnmarshalTypeError
	if errors.As(err, &typeErr) {
		return fmt.Errorf("%s: wrong type %s", typeErr.Field, typeErr.Value)
	}
	return err
}

// firstByte returns the first byte of data that is not JSON white space, or 0.
func firstByte(data []byte) byte {
	for _, b := range data {
		switch b {
		case ' ', '\t', '\r', '\n':
			continue
		}
		return b
	}
	return 0
}
