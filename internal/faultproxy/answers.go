package faultproxy

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"

	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/kubernetes/scheme"
)

// answer is what the proxy reads of a write's answer: the object's name (a create's request
// names none), its resourceVersion and, for a Lease, its holder.
type answer struct {
	name, resourceVersion, holder string
}

// readAnswer reads an answer in the encoding the client asked for: protobuf for the built-in
// kinds (client-go's and controller-runtime's clients ask for it), JSON for the others. An
// answer that carries no object (a Status) gives nothing.
func readAnswer(body []byte, contentEncoding string) answer {
	if contentEncoding == "gzip" {
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			return answer{}
		}
		if body, err = io.ReadAll(io.LimitReader(zr, maxAnswerRead)); err != nil {
			return answer{}
		}
	}
	if obj, _, err := scheme.Codecs.UniversalDeserializer().Decode(body, nil, nil); err == nil {
		var out answer
		if m, err := meta.Accessor(obj); err == nil {
			out.name, out.resourceVersion = m.GetName(), m.GetResourceVersion()
		}
		if lease, ok := obj.(*coordinationv1.Lease); ok && lease.Spec.HolderIdentity != nil {
			out.holder = *lease.Spec.HolderIdentity
		}
		return out
	}
	// A kind of this module's API, which client-go's scheme does not know: JSON.
	var obj struct {
		Metadata struct {
			Name            string `json:"name"`
			ResourceVersion string `json:"resourceVersion"`
		} `json:"metadata"`
	}
	if json.Unmarshal(body, &obj) != nil {
		return answer{}
	}
	return answer{name: obj.Metadata.Name, resourceVersion: obj.Metadata.ResourceVersion}
}
