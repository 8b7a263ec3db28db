package faultproxy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
)

// answered reads, from a write's answer, the object's resourceVersion and, for a Lease, its
// holder. An answer that is not a JSON object (a Status of a refused write has no holder, and
// its resourceVersion is empty) gives what it has.
func answered(body []byte, encoding string) (resourceVersion, holder string) {
	if encoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return "", ""
		}
		if body, err = io.ReadAll(io.LimitReader(zr, maxAnswerRead)); err != nil {
			return "", ""
		}
	}
	var obj struct {
		Metadata struct {
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
		Spec struct {
			HolderIdentity string `json:"holderIdentity"`
		} `json:"spec"`
	}
	if json.Unmarshal(body, &obj) != nil {
		return "", ""
	}
	return obj.Metadata.ResourceVersion, obj.Spec.HolderIdentity
}
