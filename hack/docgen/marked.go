package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"

	"github.com/example/switchboard/controllers/configmapwatcher"
)

// A marked block is a generated part of a page written by hand: the lines between
// "<!-- BEGIN GENERATED: NAME -->" and "<!-- END GENERATED: NAME -->", which `make docs`
// replaces and the rest of the page keeps.
type markedBlock struct {
	// page is the page's path from the module root.
	page string
	// name is the block's name in its markers.
	name string
	// generate writes the block's body.
	generate func(root string, w *bytes.Buffer) error
}

// markedBlocks are the generated blocks of hand-written pages.
var markedBlocks = []markedBlock{
	{filepath.Join("docs", "migrating", "from-reloader.md"), "reloader-flags", reloaderFormsTable("flag", configmapwatcher.ReloaderFlags, "--")},
	{filepath.Join("docs", "migrating", "from-reloader.md"), "reloader-annotations", reloaderFormsTable("annotation", configmapwatcher.ReloaderAnnotationForms, "")},
	{filepath.Join("docs", "migrating", "from-reloader.md"), "reloader-environment", reloaderFormsTable("variable", configmapwatcher.ReloaderEnvironment, "")},
	{filepath.Join("docs", "migrating", "from-reloader.md"), "reloader-chart-values", writeReloaderChartValues},
	{filepath.Join("docs", "migrating", "from-vpa.md"), "vpa-fields", writeVPAFields},
	{filepath.Join("docs", "migrating", "from-vpa.md"), "vpa-flags", writeVPAFlags},
	{filepath.Join("docs", "operations", "security.md"), "rbac-controllers", writeControllerRBAC},
	{filepath.Join("docs", "operations", "security.md"), "rbac-common", writeCommonRBAC},
	{filepath.Join("docs", "controllers", "configmapwatcher.md"), "rbac", controllerRBAC("configmapwatcher")},
	{filepath.Join("docs", "controllers", "myapp.md"), "rbac", controllerRBAC("myapp")},
	{filepath.Join("docs", "controllers", "verticalscaler.md"), "rbac", controllerRBAC("verticalscaler")},
}

// MarkedPages returns each page that holds marked blocks, by its path from root, with every
// block generated anew.
func MarkedPages(root string) (map[string][]byte, error) {
	pages := map[string][]byte{}
	for _, b := range markedBlocks {
		doc, ok := pages[b.page]
		if !ok {
			var err error
			if doc, err = os.ReadFile(filepath.Join(root, b.page)); err != nil {
				return nil, err
			}
		}
		var body bytes.Buffer
		if err := b.generate(root, &body); err != nil {
			return nil, fmt.Errorf("%s, block %s: %w", b.page, b.name, err)
		}
		doc, err := ReplaceMarked(doc, b.name, body.Bytes())
		if err != nil {
			return nil, fmt.Errorf("%s: %w", b.page, err)
		}
		pages[b.page] = doc
	}
	return pages, nil
}

// ReplaceMarked returns doc with the body of its block name, the lines between the block's
// BEGIN and END markers (each on a line of its own), replaced by body. The markers must be
// there, once each, in that order.
func ReplaceMarked(doc []byte, name string, body []byte) ([]byte, error) {
	begin := []byte("<!-- BEGIN GENERATED: " + name + " -->\n")
	end := []byte("<!-- END GENERATED: " + name + " -->\n")
	if bytes.Count(doc, begin) != 1 || bytes.Count(doc, end) != 1 {
		return nil, fmt.Errorf("block %s: want one line %q and one line %q", name, bytes.TrimSpace(begin), bytes.TrimSpace(end))
	}
	i := bytes.Index(doc, begin) + len(begin)
	j := bytes.Index(doc, end)
	if j < i || (i > len(begin) && doc[i-len(begin)-1] != '\n') || (j > 0 && doc[j-1] != '\n') {
		return nil, fmt.Errorf("block %s: its markers are out of order, or not on lines of their own", name)
	}
	if len(body) > 0 && body[len(body)-1] != '\n' {
		body = append(body, '\n')
	}
	out := make([]byte, 0, len(doc)-(j-i)+len(body))
	out = append(out, doc[:i]...)
	out = append(out, body...)
	return append(out, doc[j:]...), nil
}
