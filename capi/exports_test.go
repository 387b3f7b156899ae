package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/kvhash/kvhash/internal/abi"
)

// The C buffer of the per-thread message holds the longest message.
func TestErrorBufferFitsMessages(t *testing.T) {
	assert.Equal(t, abi.MaxMessageLen, errBufCap)
}

// exportedFuncs parses the package's Go files and returns each function
// marked with the given directive ("//export", ...) by exported name.
func exportedFuncs(t *testing.T, dir, directive string) map[string]*ast.FuncDecl {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	require.NoError(t, err)
	fset := token.NewFileSet()
	funcs := map[string]*ast.FuncDecl{}
	for _, file := range files {
		if strings.HasSuffix(file, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, file, nil, parser.ParseComments)
		require.NoError(t, err)
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Doc == nil {
				continue
			}
			for _, c := range fn.Doc.List {
				if name, ok := strings.CutPrefix(c.Text, directive+" "); ok {
					funcs[strings.TrimSpace(name)] = fn
				}
			}
		}
	}
	return funcs
}

// recovers reports whether fn's first statement defers one of the
// package's recover functions, so that no panic can leave the export.
func recovers(fn *ast.FuncDecl) bool {
	if len(fn.Body.List) == 0 {
		return false
	}
	d, ok := fn.Body.List[0].(*ast.DeferStmt)
	if !ok {
		return false
	}
	switch f := d.Call.Fun.(type) {
	case *ast.Ident:
		return f.Name == "catch" || f.Name == "catchValue"
	case *ast.FuncLit: // an inline deferred recover
		return strings.Contains(idents(f), "recover")
	}
	return false
}

// idents lists the identifiers used in f.
func idents(f *ast.FuncLit) string {
	var names []string
	ast.Inspect(f, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			names = append(names, id.Name)
		}
		return true
	})
	return strings.Join(names, " ")
}

var headerDecl = regexp.MustCompile(`(?m)^(?:const )?[a-z_0-9]+ \*?(kvhash_[a-z_0-9]+)\(`)

func headerFuncs(t *testing.T) []string {
	t.Helper()
	h, err := os.ReadFile(filepath.Join("include", "kvhash.h"))
	require.NoError(t, err)
	var names []string
	for _, m := range headerDecl.FindAllStringSubmatch(string(h), -1) {
		names = append(names, m[1])
	}
	sort.Strings(names)
	return names
}

func sortedKeys(m map[string]*ast.FuncDecl) []string {
	var keys []string
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func TestEveryExportRecovers(t *testing.T) {
	for dir, directive := range map[string]string{".": "//export", "../wasm": "//go:wasmexport"} {
		funcs := exportedFuncs(t, dir, directive)
		require.NotEmpty(t, funcs, dir)
		for name, fn := range funcs {
			assert.True(t, recovers(fn), "%s %s: the first statement must defer catch/catchValue", dir, name)
			assert.True(t, strings.HasPrefix(name, "kvhash_"), "%s %s: exports are kvhash_-prefixed", dir, name)
		}
	}
}

// The header documents exactly the library's exports, and the WASM module
// exports the same names plus its memory management.
func TestExportsMatchHeader(t *testing.T) {
	header := headerFuncs(t)
	require.Len(t, header, 24)
	assert.Equal(t, header, sortedKeys(exportedFuncs(t, ".", "//export")))

	wasm := exportedFuncs(t, "../wasm", "//go:wasmexport")
	delete(wasm, "kvhash_alloc")
	delete(wasm, "kvhash_free")
	assert.Equal(t, header, sortedKeys(wasm))
}
