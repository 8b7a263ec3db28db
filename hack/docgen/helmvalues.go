package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"
)

// chartDir is the Helm chart, from the module root.
var chartDir = filepath.Join("charts", "switchboard")

// schemaNode is a node of values.schema.json: its description, and its properties in the
// file's order.
type schemaNode struct {
	Description string `json:"description"`
	Properties  orderedProperties
}

// orderedProperties are an object's properties in the order the schema lists them.
type orderedProperties struct {
	names []string
	nodes map[string]*schemaNode
}

// UnmarshalJSON reads the properties' names in order, which a Go map would lose.
func (p *orderedProperties) UnmarshalJSON(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // {
		return err
	}
	p.nodes = map[string]*schemaNode{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		name := tok.(string)
		node := &schemaNode{}
		if err := dec.Decode(node); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		p.names = append(p.names, name)
		p.nodes[name] = node
	}
	return nil
}

// UnmarshalJSON reads a schema node; its "properties" keep their order.
func (n *schemaNode) UnmarshalJSON(data []byte) error {
	var raw struct {
		Description string          `json:"description"`
		Properties  json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return err
	}
	n.Description = raw.Description
	if raw.Properties != nil {
		return json.Unmarshal(raw.Properties, &n.Properties)
	}
	return nil
}

// writeHelmValues writes helm-values.md: every value of the chart, its default (values.yaml)
// and what it does (the schema's descriptions).
func writeHelmValues(root string, w *bytes.Buffer) error {
	schemaData, err := os.ReadFile(filepath.Join(root, chartDir, "values.schema.json"))
	if err != nil {
		return err
	}
	var schema schemaNode
	if err := json.Unmarshal(schemaData, &schema); err != nil {
		return fmt.Errorf("values.schema.json: %w", err)
	}
	valuesData, err := os.ReadFile(filepath.Join(root, chartDir, "values.yaml"))
	if err != nil {
		return err
	}
	var defaults map[string]any
	if err := yaml.Unmarshal(valuesData, &defaults); err != nil {
		return fmt.Errorf("values.yaml: %w", err)
	}
	w.WriteString(`# Helm chart values

For operators who install Switchboard with its Helm chart, ` + "`charts/switchboard`" + `: every value, its
default and what it does, from the chart's ` + "`values.yaml`" + ` and ` + "`values.schema.json`" + `, which refuses a value
outside it at install, naming the field. [Installing](../operations/install.md) shows common
settings.

| value | default | |
|---|---|---|
`)
	if err := writeValueRows(w, "", &schema, defaults); err != nil {
		return err
	}
	w.WriteString(`
A value that becomes a flag of the manager is the flag of the same meaning
([flags](flags.md)); an empty string leaves the manager's default. The chart's objects are
those of the kustomize manifests, which ` + "`test/helm`" + ` checks.

## Next

- [Installing](../operations/install.md): Helm, one file, or kustomize.
- [Migrating from Reloader](../migrating/from-reloader.md): Reloader's chart values, and ours.
`)
	return nil
}

// writeValueRows writes a row per value under node. An object whose every property the schema
// lists is in values.yaml is walked; the rest are rows, such as a security context, whose schema
// constrains some Kubernetes fields of many.
func writeValueRows(w *bytes.Buffer, prefix string, node *schemaNode, defaults map[string]any) error {
	for _, name := range node.Properties.names {
		child := node.Properties.nodes[name]
		value, ok := defaults[name]
		if !ok {
			return fmt.Errorf("%s%s is in values.schema.json, not in values.yaml", prefix, name)
		}
		if nested, ok := value.(map[string]any); ok && len(child.Properties.names) > 0 && hasAll(nested, child.Properties.names) {
			if err := writeValueRows(w, prefix+name+".", child, nested); err != nil {
				return err
			}
			continue
		}
		def, err := json.Marshal(value)
		if err != nil {
			return err
		}
		if child.Description == "" {
			return fmt.Errorf("%s%s has no description in values.schema.json", prefix, name)
		}
		fmt.Fprintf(w, "| `%s%s` | `%s` | %s |\n", prefix, name, def, strings.ReplaceAll(child.Description, "|", `\|`))
	}
	return nil
}

// hasAll says whether m has every key.
func hasAll(m map[string]any, keys []string) bool {
	for _, k := range keys {
		if _, ok := m[k]; !ok {
			return false
		}
	}
	return true
}
