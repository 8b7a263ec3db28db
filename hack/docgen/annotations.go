package main

import (
	"bytes"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// apisDir is where the API package is, from the module root.
var apisDir = filepath.Join("apis", "v1alpha1")

// constBlock is a const ( ... ) block of the API package: its doc comment and its string
// constants, in source order.
type constBlock struct {
	file   string
	doc    string
	consts []constant
}

// constant is one documented string constant.
type constant struct {
	name, value, doc string
}

// readConstBlocks parses the API package and returns its const blocks of string constants
// whose names keep(name) accepts, in file and source order.
func readConstBlocks(root string, keep func(name string) bool) ([]constBlock, error) {
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, apisDir, "*.go"))
	if err != nil {
		return nil, err
	}
	sort.Strings(files)
	var blocks []constBlock
	for _, path := range files {
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(filepath.Base(path), "zz_generated") {
			continue
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments)
		if err != nil {
			return nil, err
		}
		for _, decl := range f.Decls {
			gen, ok := decl.(*ast.GenDecl)
			if !ok || gen.Tok != token.CONST {
				continue
			}
			block := constBlock{file: filepath.Base(path), doc: text(gen.Doc)}
			for _, spec := range gen.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, name := range vs.Names {
					if !keep(name.Name) || i >= len(vs.Values) {
						continue
					}
					lit, ok := vs.Values[i].(*ast.BasicLit)
					if !ok || lit.Kind != token.STRING {
						continue
					}
					value, err := strconv.Unquote(lit.Value)
					if err != nil {
						return nil, err
					}
					doc := text(vs.Doc)
					if doc == "" {
						return nil, fmt.Errorf("%s: %s has no doc comment", path, name.Name)
					}
					block.consts = append(block.consts, constant{name: name.Name, value: value, doc: doc})
				}
			}
			if len(block.consts) > 0 {
				blocks = append(blocks, block)
			}
		}
	}
	return blocks, nil
}

// text is a comment group as one paragraph.
func text(g *ast.CommentGroup) string {
	if g == nil {
		return ""
	}
	return strings.Join(strings.Fields(g.Text()), " ")
}

// isAnnotation says whether a constant of the API package names an annotation (or the prefix
// of a family of them).
func isAnnotation(name string) bool {
	return strings.HasSuffix(name, "Annotation") || strings.HasSuffix(name, "AnnotationPrefix")
}

// writeAnnotations writes annotations.md: every annotation constant of apis/, by block.
func writeAnnotations(root string, w *bytes.Buffer) error {
	blocks, err := readConstBlocks(root, isAnnotation)
	if err != nil {
		return err
	}
	if len(blocks) == 0 {
		return fmt.Errorf("no annotation constants in %s", apisDir)
	}
	w.WriteString(`# Annotations

For people who write manifests that Switchboard reads, and for tools that read what it writes.
Every annotation of the API package (` + "`apis/v1alpha1`" + `), with the Go constant that names it.

`)
	for _, b := range blocks {
		fmt.Fprintf(w, "%s\n\n| annotation | constant | meaning |\n|---|---|---|\n", b.doc)
		for _, c := range b.consts {
			fmt.Fprintf(w, "| `%s` | `%s` | %s |\n", c.value, c.name, cell(c.doc))
		}
		w.WriteString("\n")
	}
	w.WriteString("How the configmapwatcher reads them: [configmapwatcher](../controllers/configmapwatcher.md);\nReloader's, side by side with ours: [from-reloader](../migrating/from-reloader.md).\n")
	return nil
}
