package config

import (
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth"
)

// FuzzConfigFile feeds arbitrary text as hearth.toml: decoding never
// panics, every error names the file, no secret is ever taken from it,
// and the same text gives the same errors twice (they are sorted by line,
// not by map order).
func FuzzConfigFile(f *testing.F) {
	if b, err := os.ReadFile("testdata/example.toml"); err == nil {
		f.Add(string(b))
	}
	for _, s := range []string{
		"",
		"addr = \"127.0.0.1:7744\"\n",
		"history = -1\ncontext_budget = \"big\"\n",
		"model.provider = \"xai\"\nmodel.name = \"grok\"\n",
		"[model]\nanthropic_api_key = \"sk-ant-hunter2\"\n", // a secret: refused
		"auth_token = \"hunter2\"\n",                        // a secret: refused
		"[model.extra]\nx = 1\n",                            // a table only implied
		"model = 3\n",                                       // a table that is not
		"[[model]]\nname = \"a\"\n",                         // an array of tables
		"tool_timeout = \"1m\"\ntool_timeout = \"2m\"\n",    // duplicate key
		"log_level = \"loud\"\n",                            // no such level
		"[recall]\nembed_provider = \"   \"\n",              // empty is left out
		"a.b.c.d = 1\n\"\" = 2\n",
		"x = [1, \"a\", {b = 2}]\n",
		"\x00\xff = 1",
	} {
		f.Add(s)
	}
	const path = "/cfg/hearth.toml"
	f.Fuzz(func(t *testing.T, data string) {
		decode := func() (*Config, []string) {
			l := &loader{o: LoadOptions{ConfigDir: "/cfg", DataDir: "/data", CacheDir: "/cache"}, missing: map[string]error{}}
			c := l.defaults()
			var msgs []string
			for _, err := range decodeFile(c, path, []byte(data)) {
				msgs = append(msgs, err.Error())
			}
			return c, msgs
		}
		c, errs := decode()
		for _, e := range errs {
			if !strings.Contains(e, path) {
				t.Errorf("error %q does not name the file", e)
			}
		}
		for _, fl := range fields {
			if fl.secret && !fl.value(c).empty() {
				t.Errorf("secret %s was read from the file", fl.key)
			}
		}
		if _, again := decode(); fmt.Sprint(again) != fmt.Sprint(errs) {
			t.Errorf("errors differ between two decodings:\n%q\n%q", errs, again)
		}
	})
}

// FuzzPrefs feeds arbitrary bytes as preferences.json: parsing never
// panics; what it accepts is normalised (provider lower case and
// supported, a context budget that validates), and written back as JSON
// it parses to the same preferences.
func FuzzPrefs(f *testing.F) {
	for _, s := range []string{
		``,
		`{}`,
		`null`,
		`{"provider":" Anthropic ","model":" claude "}`,
		`{"provider":"nobody"}`,
		`{"context":{"budget_tokens":24000,"shares":{"recent":75,"knowledge":10,"memories":5,"tools":10}}}`,
		`{"context":{"budget_tokens":24000,"shares":{"recent":80,"memories":10,"tools":10}}}`, // written before the knowledge share
		`{"context":{"shares":{"recent":90,"knowledge":90}}}`,
		`{"context":{"budget_tokens":-1}}`,
		`{"context":null}`,
		`{"context":{"shares":null}}`,
		`{"colour":"blue"}`,
		`{} {}`,
		`{"model":"a"}garbage`,
		`[1]`,
		"\xff",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		w := NewPrefsWatcher(PrefsOptions{})
		p, err := w.parse(data, nil)
		if err != nil {
			if p != (Preferences{}) {
				t.Fatalf("parse failed (%v) but returned %+v", err, p)
			}
			return
		}
		if p.Provider != strings.ToLower(strings.TrimSpace(p.Provider)) || checkProvider(p.Provider) != nil {
			t.Errorf("accepted provider %q", p.Provider)
		}
		if p.Context != nil {
			if err := p.Context.Validate(); err != nil {
				t.Errorf("accepted a context budget that does not validate: %v", err)
			}
		}
		out := struct {
			Provider string                `json:"provider"`
			Model    string                `json:"model"`
			Context  *hearth.ContextBudget `json:"context"`
		}{p.Provider, p.Model, p.Context}
		b, err := json.Marshal(out)
		if err != nil {
			t.Fatal(err)
		}
		q, err := w.parse(b, nil)
		if err != nil {
			t.Fatalf("%s, written back from %+v, does not parse: %v", b, p, err)
		}
		if !reflect.DeepEqual(p, q) {
			t.Errorf("round trip: %+v, then %+v", p, q)
		}
	})
}
