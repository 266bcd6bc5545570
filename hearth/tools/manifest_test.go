package tools

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var parseManifestTests = []struct {
	name, in string
	want     Manifest
	wantErr  string // a part of the error; "" for none
}{
	{"permission and effects", `{"name":"files__write_file","side_effects":"writes_local","permission":"safe"}`,
		Manifest{Name: "files__write_file", SideEffects: WritesLocal, Permission: Safe}, ""},
	{"description only", `{"name":"a__b","description":"  Reads a page.  "}`, Manifest{Name: "a__b", Description: "Reads a page."}, ""},
	{"disabled", `{"name":"a__b","disabled":true}`, Manifest{Name: "a__b", Disabled: true}, ""},
	{"admin", `{"name":"a__b","permission":"admin"}`, Manifest{Name: "a__b", Permission: Admin}, ""},
	{"no name", `{"permission":"safe"}`, Manifest{}, `"name" is missing`},
	{"bad name", `{"name":"a b","permission":"safe"}`, Manifest{}, `name "a b"`},
	{"long name", `{"name":"` + strings.Repeat("x", 65) + `","permission":"safe"}`, Manifest{}, "1 to 64 bytes"},
	{"unknown permission", `{"name":"a","permission":"yes"}`, Manifest{}, `permission "yes": want safe, confirm or admin`},
	{"unknown effect", `{"name":"a","side_effects":"none"}`, Manifest{}, `side_effects "none"`},
	{"unknown key", `{"name":"a","permision":"safe"}`, Manifest{}, `unknown field "permision"`},
	{"sets nothing", `{"name":"a"}`, Manifest{}, "sets nothing"},
	{"not an object", `["a"]`, Manifest{}, "not a manifest"},
	{"two values", `{"name":"a","permission":"safe"} {}`, Manifest{}, "more than one JSON value"},
	{"not JSON", `{"name":`, Manifest{}, "not a manifest"},
	{"empty", ``, Manifest{}, "not a manifest"},
	{"too large", `{"name":"a","description":"` + strings.Repeat("d", maxManifestBytes) + `"}`, Manifest{}, "larger than 64 KiB"},
}

func TestParseManifest(t *testing.T) {
	for _, tc := range parseManifestTests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseManifest([]byte(tc.in))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func FuzzParseManifest(f *testing.F) {
	for _, tc := range parseManifestTests {
		f.Add([]byte(tc.in))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := ParseManifest(b)
		if err != nil {
			return
		}
		if !validName(m.Name) {
			t.Fatalf("accepted name %q", m.Name)
		}
		if m.SideEffects == "" && m.Permission == "" && m.Description == "" && !m.Disabled {
			t.Fatalf("accepted a manifest that sets nothing: %+v", m)
		}
		// What it accepted, written again, reads the same.
		again, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		m2, err := ParseManifest(again)
		if err != nil || !cmp.Equal(m, m2) {
			t.Fatalf("round trip: %+v, then %+v (%v)", m, m2, err)
		}
	})
}

// TestManifestsApplyToMCPTools: manifests in the directory set an MCP
// tool's side effects, permission and description, or leave it out;
// invalid ones are reported by file and left out, the rest apply; a
// change takes effect on the next List, with no restart.
func TestManifestsApplyToMCPTools(t *testing.T) {
	h := startHTTPServer(t)
	g := newGateway(t)
	g.set(httpEntry("web", h.URL, nil))
	dir := filepath.Join(t.TempDir(), "tools")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	write := func(name, body string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("boom.tool.json", `{"name":"web__boom","side_effects":"read_only","permission":"safe","description":"Fails, harmlessly."}`)
	write("slow.tool.json", `{"name":"web__slow","disabled":true}`)
	write("typo.tool.json", `{"name":"web__echo","permision":"confirm"}`)
	write("builtin.tool.json", `{"name":"current_time","permission":"confirm"}`)
	write("again.tool.json", `{"name":"web__boom","side_effects":"writes_external"}`) // read before boom.tool.json
	write("notes.txt", `not a manifest`)
	log, logs := testLog()
	r := newTestRegistry(t, Options{GatewayPath: g.path, ManifestDir: dir, Builtins: []Builtin{CurrentTime(time.Now)}, Log: log})

	specs, err := r.List(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	boom, _ := specByName(specs, "web__boom")
	// again.tool.json is read first (name order) and wins; boom's is the
	// duplicate left out.
	if boom.Permission != Confirm || boom.Effect != WritesExternal || boom.Description != "Always fails." {
		t.Errorf("web__boom = %+v, want again.tool.json's side effects only", boom)
	}
	if _, ok := specByName(specs, "web__slow"); ok {
		t.Error("a disabled tool is listed")
	}
	if _, err := r.Call(t.Context(), "web__slow", json.RawMessage(`{}`)); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("calling a disabled tool: %v, want ErrUnknownTool", err)
	}
	if echo, _ := specByName(specs, "web__echo"); echo.Permission != Safe {
		t.Errorf("web__echo = %+v: an invalid manifest must change nothing", echo)
	}
	if ct, _ := specByName(specs, "current_time"); ct.Permission != Safe {
		t.Errorf("current_time = %+v: built-ins keep their class", ct)
	}
	var reported []string
	for _, e := range r.ManifestErrors() {
		reported = append(reported, e.Error())
	}
	for _, want := range []string{
		"tools/boom.tool.json: web__boom is described already by tools/again.tool.json",
		"tools/builtin.tool.json: current_time is a built-in tool",
		`tools/typo.tool.json: not a manifest: json: unknown field "permision"`,
	} {
		if !slices.ContainsFunc(reported, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("errors %q lack %q", reported, want)
		}
	}
	if len(reported) != 3 {
		t.Errorf("%d errors, want 3: %q", len(reported), reported)
	}
	// Logged once each, not on every List.
	if _, err := r.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(logs.String(), "tools/typo.tool.json"); n != 1 {
		t.Errorf("the typo was logged %d times, want once:\n%s", n, logs)
	}

	// Fixed and changed on disk: the next List has it.
	os.Remove(filepath.Join(dir, "again.tool.json"))
	write("typo.tool.json", `{"name":"web__echo","permission":"confirm"}`)
	specs, _ = r.List(t.Context())
	boom, _ = specByName(specs, "web__boom")
	echo, _ := specByName(specs, "web__echo")
	if boom.Permission != Safe || boom.Effect != ReadOnly || !boom.Idempotent || boom.Description != "Fails, harmlessly." || echo.Permission != Confirm {
		t.Errorf("after the change: boom %+v, echo %+v", boom, echo)
	}
	if errs := r.ManifestErrors(); len(errs) != 1 {
		t.Errorf("errors after the fix: %v", errs)
	}
}

// TestManifestDirMissing: no directory is no manifests, not an error.
func TestManifestDirMissing(t *testing.T) {
	r := newTestRegistry(t, Options{ManifestDir: filepath.Join(t.TempDir(), "tools"), Builtins: []Builtin{CurrentTime(time.Now)}})
	if _, err := r.List(t.Context()); err != nil {
		t.Fatal(err)
	}
	if errs := r.ManifestErrors(); len(errs) != 0 {
		t.Errorf("errors: %v", errs)
	}
}
