package faultproxy

import (
	"net/http"
	"strings"
)

// Request is what the proxy reads of a request to the API server: its verb as the API server
// names it (get, list, watch, create, update, patch, apply, delete, deletecollection), and the
// object it is about. A request outside the resource API (discovery, /version, /openapi) has an
// empty Resource.
type Request struct {
	Verb                         string
	Group, Resource, Subresource string
	Namespace, Name              string
	// FieldManager is the fieldManager parameter; empty when the client sent none.
	FieldManager string
}

// Write says whether the request changes something.
func (r Request) Write() bool {
	switch r.Verb {
	case "create", "update", "patch", "apply", "delete", "deletecollection":
		return true
	}
	return false
}

// Watch says whether the request opens a watch stream.
func (r Request) Watch() bool { return r.Verb == "watch" }

// Object names the object as "resource[/subresource] namespace/name", for messages.
func (r Request) Object() string {
	resource := r.Resource
	if r.Subresource != "" {
		resource += "/" + r.Subresource
	}
	if r.Namespace != "" {
		return resource + " " + r.Namespace + "/" + r.Name
	}
	return resource + " " + r.Name
}

// ParseRequest reads a request to the API server as kube-apiserver's request-info resolver
// does, for the paths clients use: /api/v1/... and /apis/GROUP/VERSION/..., namespaced or not,
// with the legacy /watch/ prefix.
func ParseRequest(r *http.Request) Request {
	var req Request
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	var rest []string
	switch {
	case len(parts) >= 2 && parts[0] == "api":
		rest = parts[2:]
	case len(parts) >= 3 && parts[0] == "apis":
		req.Group, rest = parts[1], parts[3:]
	}
	watchPrefix := len(rest) > 0 && rest[0] == "watch"
	if watchPrefix {
		rest = rest[1:]
	}
	// namespaces/NS/RESOURCE... is namespaced, unless it is the namespace's own subresource.
	if len(rest) >= 3 && rest[0] == "namespaces" && rest[2] != "status" && rest[2] != "finalize" {
		req.Namespace, rest = rest[1], rest[2:]
	}
	if len(rest) > 0 {
		req.Resource = rest[0]
	}
	if len(rest) > 1 {
		req.Name = rest[1]
	}
	if len(rest) > 2 {
		req.Subresource = rest[2]
	}
	query := r.URL.Query()
	req.FieldManager = query.Get("fieldManager")
	watch := watchPrefix || query.Get("watch") == "true" || query.Get("watch") == "1"
	apply := strings.HasPrefix(r.Header.Get("Content-Type"), "application/apply-patch")
	req.Verb = verb(r.Method, req, watch, apply)
	return req
}

// verb names what method does to req's object.
func verb(method string, req Request, watch, apply bool) string {
	switch method {
	case http.MethodGet, http.MethodHead:
		switch {
		case watch:
			return "watch"
		case req.Name == "" && req.Resource != "":
			return "list"
		}
		return "get"
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodPatch:
		if apply {
			return "apply"
		}
		return "patch"
	case http.MethodDelete:
		if req.Name == "" {
			return "deletecollection"
		}
		return "delete"
	}
	return strings.ToLower(method)
}
