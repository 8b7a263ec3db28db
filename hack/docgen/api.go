package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/example/switchboard/internal/markdown"
)

// crdDir holds the CRDs controller-gen writes, from the module root.
var crdDir = filepath.Join("config", "crd", "bases")

// writeAPI writes api.md: each CRD's fields with their types, defaults, validation and
// descriptions, then the condition types and reasons of apis/.
func writeAPI(root string, w *bytes.Buffer) error {
	paths, err := filepath.Glob(filepath.Join(root, crdDir, "*.yaml"))
	if err != nil {
		return err
	}
	sort.Strings(paths)
	var crds []apiextensionsv1.CustomResourceDefinition
	for _, path := range paths {
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		crds = append(crds, crd)
	}
	if len(crds) == 0 {
		return fmt.Errorf("no CRDs in %s", crdDir)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Spec.Names.Kind < crds[j].Spec.Names.Kind })
	w.WriteString(`# API reference

For people who write Switchboard's custom resources, and for tools that read them. Every field
of every kind, from the CRDs that ` + "`make manifests`" + ` generates (` + "`config/crd/bases`" + `), then the
condition types and reasons the controllers write.

`)
	for _, crd := range crds {
		fmt.Fprintf(w, "- [%s](#%s)\n", crd.Spec.Names.Kind, markdown.Anchor(crd.Spec.Names.Kind))
	}
	w.WriteString("- [Conditions and reasons](#conditions-and-reasons)\n")
	for _, crd := range crds {
		if err := writeCRD(w, crd); err != nil {
			return fmt.Errorf("%s: %w", crd.Name, err)
		}
	}
	return writeConditions(root, w)
}

// writeCRD writes one kind's section.
func writeCRD(w *bytes.Buffer, crd apiextensionsv1.CustomResourceDefinition) error {
	names := crd.Spec.Names
	fmt.Fprintf(w, "\n## %s\n\n", names.Kind)
	for _, v := range crd.Spec.Versions {
		if !v.Served {
			continue
		}
		fmt.Fprintf(w, "`apiVersion: %s/%s`, %s", crd.Spec.Group, v.Name, strings.ToLower(string(crd.Spec.Scope)))
		if len(names.ShortNames) > 0 {
			fmt.Fprintf(w, ", short names `%s`", strings.Join(names.ShortNames, "`, `"))
		}
		if v.Subresources != nil && v.Subresources.Status != nil {
			w.WriteString(", status subresource")
		}
		w.WriteString(".\n\n")
		if v.Schema == nil || v.Schema.OpenAPIV3Schema == nil {
			return fmt.Errorf("version %s has no schema", v.Name)
		}
		schema := v.Schema.OpenAPIV3Schema
		if schema.Description != "" {
			w.WriteString(oneLine(schema.Description) + "\n\n")
		}
		w.WriteString("| field | type | required | default | validation | description |\n|---|---|---|---|---|---|\n")
		for _, top := range []string{"spec", "status"} {
			if prop, ok := schema.Properties[top]; ok {
				writeFields(w, top, prop, slices.Contains(schema.Required, top))
			}
		}
		w.WriteString("\n")
	}
	return nil
}

// writeFields writes a row for the field at path and, below it, rows for its fields.
func writeFields(w *bytes.Buffer, path string, s apiextensionsv1.JSONSchemaProps, required bool) {
	fmt.Fprintf(w, "| `%s` | %s | %s | %s | %s | %s |\n", path, typeOf(s), yesNo(required), defaultOf(s), cell(validationOf(s)), cell(oneLine(s.Description)))
	switch {
	case len(s.Properties) > 0:
		for _, name := range sortedKeys(s.Properties) {
			writeFields(w, path+"."+name, s.Properties[name], slices.Contains(s.Required, name))
		}
	case s.Items != nil && s.Items.Schema != nil && len(s.Items.Schema.Properties) > 0:
		item := *s.Items.Schema
		for _, name := range sortedKeys(item.Properties) {
			writeFields(w, path+"[]."+name, item.Properties[name], slices.Contains(item.Required, name))
		}
	}
}

// typeOf is a field's type as Go readers know it: []T for arrays, map[string]T for maps,
// quantity for int-or-string resource quantities.
func typeOf(s apiextensionsv1.JSONSchemaProps) string {
	switch {
	case s.XIntOrString:
		return "int or string"
	case s.Type == "array" && s.Items != nil && s.Items.Schema != nil:
		return "[]" + typeOf(*s.Items.Schema)
	case s.Type == "object" && s.AdditionalProperties != nil && s.AdditionalProperties.Schema != nil:
		return "map[string]" + typeOf(*s.AdditionalProperties.Schema)
	case s.Format != "" && s.Type == "string":
		return "string (" + s.Format + ")"
	case s.Type == "":
		return "any"
	}
	return s.Type
}

// defaultOf is a field's default, if it has one.
func defaultOf(s apiextensionsv1.JSONSchemaProps) string {
	if s.Default == nil {
		return ""
	}
	return "`" + string(s.Default.Raw) + "`"
}

// validationOf lists a field's schema constraints and CEL rules.
func validationOf(s apiextensionsv1.JSONSchemaProps) string {
	var parts []string
	if len(s.Enum) > 0 {
		var values []string
		for _, v := range s.Enum {
			values = append(values, "`"+string(v.Raw)+"`")
		}
		parts = append(parts, "one of "+strings.Join(values, ", "))
	}
	bound := func(name string, v any) {
		parts = append(parts, fmt.Sprintf("%s %v", name, v))
	}
	if s.Minimum != nil {
		bound("minimum", *s.Minimum)
	}
	if s.Maximum != nil {
		bound("maximum", *s.Maximum)
	}
	if s.MinLength != nil {
		bound("min length", *s.MinLength)
	}
	if s.MaxLength != nil {
		bound("max length", *s.MaxLength)
	}
	if s.MinItems != nil {
		bound("min items", *s.MinItems)
	}
	if s.MaxItems != nil {
		bound("max items", *s.MaxItems)
	}
	if s.Pattern != "" {
		parts = append(parts, "pattern `"+s.Pattern+"`")
	}
	if s.XListType != nil {
		list := "list type " + *s.XListType
		if len(s.XListMapKeys) > 0 {
			list += " (keys " + strings.Join(s.XListMapKeys, ", ") + ")"
		}
		parts = append(parts, list)
	}
	for _, rule := range s.XValidations {
		message := rule.Message
		if message == "" {
			message = "must satisfy"
		}
		parts = append(parts, fmt.Sprintf("%s (`%s`)", strings.TrimSuffix(message, "."), rule.Rule))
	}
	return strings.Join(parts, "; ")
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return ""
}

// oneLine joins a description's lines.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

func sortedKeys(m map[string]apiextensionsv1.JSONSchemaProps) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// writeConditions writes the condition types and reasons of apis/, block by block.
func writeConditions(root string, w *bytes.Buffer) error {
	blocks, err := readConstBlocks(root, func(name string) bool {
		return strings.HasPrefix(name, "Condition") || strings.HasPrefix(name, "Reason")
	})
	if err != nil {
		return err
	}
	if len(blocks) == 0 {
		return fmt.Errorf("no condition types or reasons in %s", apisDir)
	}
	w.WriteString("\n## Conditions and reasons\n\nThe words of the controllers' status and Events (`apis/v1alpha1/conditions.go`).\n")
	for _, b := range blocks {
		fmt.Fprintf(w, "\n%s\n\n| value | constant | meaning |\n|---|---|---|\n", b.doc)
		for _, c := range b.consts {
			fmt.Fprintf(w, "| `%s` | `%s` | %s |\n", c.value, c.name, cell(c.doc))
		}
	}
	w.WriteString("\n## Next\n\n- The controllers: [myapp](../controllers/myapp.md), [verticalscaler](../controllers/verticalscaler.md), [configmapwatcher](../controllers/configmapwatcher.md).\n- [Annotations](annotations.md), [flags](flags.md).\n")
	return nil
}
