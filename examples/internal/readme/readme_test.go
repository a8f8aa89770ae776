package readme

import (
	"bytes"
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

const root = "../../.."

var update = flag.Bool("update", false, "rewrite README.md's Go blocks from the Examples they name")

// block is a fenced code block of the README, with the marker before it.
type block struct {
	line   int // of the opening fence, from 1
	end    int // of the closing fence
	lang   string
	marker string // "pkg Func" from <!-- example: pkg Func -->
	text   string
}

var markerRE = regexp.MustCompile(`^<!-- example: (\S+) (Example\w*) -->$`)

func blocks(t *testing.T) []block {
	t.Helper()
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	var out []block
	lines := strings.Split(string(src), "\n")
	marker := ""
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		if m := markerRE.FindStringSubmatch(l); m != nil {
			marker = m[1] + " " + m[2]
			continue
		}
		if !strings.HasPrefix(l, "```") {
			if strings.TrimSpace(l) != "" {
				marker = ""
			}
			continue
		}
		b := block{line: i + 1, lang: strings.TrimPrefix(l, "```"), marker: marker}
		var body []string
		for i++; i < len(lines) && lines[i] != "```"; i++ {
			body = append(body, lines[i])
		}
		b.text, b.end = strings.Join(body, "\n"), i+1
		out = append(out, b)
		marker = ""
	}
	return out
}

// example returns the body of an Example function of a package directory,
// one tab of indentation removed, and whether it checks its output.
func example(t *testing.T, dir, name string) (string, bool) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob(filepath.Join(root, dir, "*_test.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range files {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, path, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			fn, ok := d.(*ast.FuncDecl)
			if !ok || fn.Recv != nil || fn.Name.Name != name {
				continue
			}
			body := src[fset.Position(fn.Body.Lbrace).Offset+1 : fset.Position(fn.Body.Rbrace).Offset]
			var lines []string
			for _, l := range strings.Split(strings.Trim(string(body), "\n"), "\n") {
				lines = append(lines, strings.TrimPrefix(l, "\t"))
			}
			hasOutput := false
			for _, c := range f.Comments {
				if c.Pos() > fn.Body.Lbrace && c.End() < fn.Body.Rbrace && strings.Contains(c.Text(), "Output:") {
					hasOutput = true
				}
			}
			return strings.Join(lines, "\n"), hasOutput
		}
	}
	t.Fatalf("no function %s in %s", name, dir)
	return "", false
}

// Every Go block of the README is an Example that go test runs and whose
// output it checks, word for word: the quick starts compile and do what
// they say.
func TestGoBlocksAreExamples(t *testing.T) {
	n := 0
	var fixes []block
	for _, b := range blocks(t) {
		if b.lang != "go" {
			continue
		}
		n++
		if b.marker == "" {
			t.Errorf("README.md:%d: a Go block without <!-- example: pkg ExampleName --> before it: it would not be compiled or run", b.line)
			continue
		}
		dir, name, _ := strings.Cut(b.marker, " ")
		body, hasOutput := example(t, dir, name)
		if !hasOutput {
			t.Errorf("README.md:%d: %s.%s has no // Output: comment, so go test does not check it", b.line, dir, name)
		}
		if body != b.text {
			if *update {
				b.text = body
				fixes = append(fixes, b)
				continue
			}
			t.Errorf("README.md:%d: the block differs from %s.%s (go test ./examples/internal/readme -update rewrites it):\n%s", b.line, dir, name, body)
		}
	}
	if n == 0 {
		t.Error("expect the README's quick starts as Go blocks, found none")
	}
	if len(fixes) > 0 {
		rewrite(t, fixes)
	}
}

// rewrite replaces the text of the blocks given in README.md.
func rewrite(t *testing.T, fixes []block) {
	t.Helper()
	path := filepath.Join(root, "README.md")
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(src), "\n")
	for i := len(fixes) - 1; i >= 0; i-- { // from the end, so line numbers hold
		b := fixes[i]
		lines = append(lines[:b.line], append(strings.Split(b.text, "\n"), lines[b.end-1:]...)...)
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("rewrote %d blocks of README.md", len(fixes))
}

var goRunRE = regexp.MustCompile(`go run (\./[A-Za-z0-9_./-]+)`)

// Every go run command of the README names one program of this module
// (go run takes one main package, so no ./... pattern).
func TestGoRunCommandsNamePrograms(t *testing.T) {
	src, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	matches := goRunRE.FindAllSubmatch(src, -1)
	if len(matches) == 0 {
		t.Fatal("expect go run commands in the README, found none")
	}
	for _, m := range matches {
		path := string(m[1])
		if strings.Contains(path, "...") {
			t.Errorf("README: go run %s: go run takes one program", path)
			continue
		}
		files, _ := filepath.Glob(filepath.Join(root, path, "*.go"))
		isMain := false
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(src, []byte("\npackage main\n")) {
				isMain = true
			}
		}
		if !isMain {
			t.Errorf("README: go run %s: no main package there", path)
		}
	}
}
