package main_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/llm/llmtest"
)

// The agent proposes two preferences, which policy queues; mnemo memory
// pending shows them, approve writes one to the vault, reject drops the
// other, and the list is empty after. Usage errors exit 2, an unknown id 1.
func TestMemoryReview(t *testing.T) {
	model := llmtest.NewOpenAI(t, "sk-test")
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", openaiEnv(model))

	for _, tc := range []struct {
		name string
		args []string
	}{
		{"no subcommand", []string{"memory"}},
		{"approve without id", []string{"memory", "approve"}},
		{"unknown subcommand", []string{"memory", "frob"}},
		{"pending with an argument", []string{"memory", "pending", "x"}},
		{"edit with no change", []string{"memory", "edit", "knowledge/a.md"}},
		{"read without a path", []string{"memory", "read"}},
	} {
		if r := runMnemo(t, d.Addr, token, "", tc.args...); r.code != 2 {
			t.Errorf("%s: %v\nwant exit 2", tc.name, r)
		}
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "pending"); r.code != 0 || !strings.Contains(r.stdout, "no proposals wait") {
		t.Errorf("empty list: %v", r)
	}

	model.Enqueue(
		llmtest.Reply{ToolCalls: []llmtest.ToolCall{
			{ID: "p1", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/coffee.md","title":"Coffee","type":"preference","content":"The owner drinks black coffee without sugar.","why":"the owner said so"}`},
			{ID: "p2", Name: "memory_propose", Arguments: `{"path":"knowledge/prefs/tea.md","title":"Tea","type":"preference","content":"The owner likes green tea in the afternoon.","why":"the owner said so"}`},
		}},
		llmtest.Reply{Chunks: []llmtest.Chunk{{Text: "I'll ask you to confirm."}}},
	)
	if r := runMnemo(t, d.Addr, token, "", "send", "black coffee, and green tea in the afternoon"); r.code != 0 {
		t.Fatalf("send: %v", r)
	}
	r := runMnemo(t, d.Addr, token, "", "memory", "pending")
	ls := lines(r.stdout)
	if r.code != 0 || len(ls) != 2 || !strings.Contains(ls[0], "knowledge/prefs/coffee.md") || !strings.Contains(ls[1], "knowledge/prefs/tea.md") {
		t.Fatalf("list: %v", r)
	}
	coffee, tea := strings.Fields(ls[0])[0], strings.Fields(ls[1])[0]

	if r := runMnemo(t, d.Addr, token, "", "memory", "approve", coffee); r.code != 0 || !strings.Contains(r.stdout, "applied "+coffee+": knowledge/prefs/coffee.md (commit ") {
		t.Errorf("approve: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "coffee.md")); err != nil {
		t.Errorf("the approved note: %v", err)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "reject", tea); r.code != 0 || !strings.Contains(r.stdout, "rejected "+tea) {
		t.Errorf("reject: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, "knowledge", "prefs", "tea.md")); !os.IsNotExist(err) {
		t.Errorf("the rejected note was written: %v", err)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "approve", tea); r.code != 1 || !strings.Contains(r.stderr, "no proposal waits") {
		t.Errorf("approve a decided one: %v\nwant exit 1", r)
	}
	if r := runMnemo(t, d.Addr, token, "", "memory", "pending"); r.code != 0 || !strings.Contains(r.stdout, "no proposals wait") {
		t.Errorf("list after: %v", r)
	}
	// Both decisions are journal records; mnemo history is the
	// conversation, without them.
	shards, _ := filepath.Glob(filepath.Join(root, "threads", "*.jsonl"))
	var journaled []string
	for _, s := range shards {
		b, _ := os.ReadFile(s)
		for _, l := range lines(string(b)) {
			if strings.Contains(l, `"kind":"decision"`) {
				journaled = append(journaled, l)
			}
		}
	}
	if len(journaled) != 2 || !strings.Contains(journaled[0], coffee) || !strings.Contains(journaled[0], `"verdict":"applied"`) ||
		!strings.Contains(journaled[1], tea) || !strings.Contains(journaled[1], `"verdict":"rejected"`) {
		t.Errorf("decision records in the journal: %q", journaled)
	}
	if r := runMnemo(t, d.Addr, token, "", "history", "--all"); r.code != 0 || strings.Contains(r.stdout, coffee) || strings.Contains(r.stdout, tea) || !strings.Contains(r.stdout, "black coffee") {
		t.Errorf("history: %v\nwant the conversation without the decisions", r)
	}
	// The index layer drops the recall index, which rebuilds behind.
	if r := runMnemo(t, d.Addr, token, "", "memory", "purge", "index"); r.code != 0 || !strings.Contains(r.stdout, "purged index") {
		t.Errorf("purge index: %v", r)
	}
}

// Every vault operation through mnemo memory against the real hearth:
// write (from stdin and from a file), read now and at a version, edit,
// list with filters, history, delete (deprecate, then --hard), and a
// write hearth refuses.
func TestMemoryOperations(t *testing.T) {
	root := filepath.Join(t.TempDir(), "root")
	d := startDaemon(t, root, "127.0.0.1:0", nil)
	mem := func(stdin string, args ...string) mnemoRun {
		t.Helper()
		return runMnemo(t, d.Addr, token, stdin, append([]string{"memory"}, args...)...)
	}
	path := "knowledge/projects/garden.md"
	note := "---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6F\ntitle: Garden\ntype: project\n---\nTomatoes on the balcony.\n"
	r := mem(note, "write", path, "--reason", "my garden")
	if r.code != 0 || !strings.Contains(r.stdout, "applied prop_") || !strings.Contains(r.stdout, path+" (commit ") {
		t.Fatalf("write: %v", r)
	}
	first := r.stdout[strings.Index(r.stdout, "(commit ")+8 : strings.LastIndex(r.stdout, ")")]
	if b, _ := os.ReadFile(filepath.Join(root, path)); string(b) != note {
		t.Fatalf("the note on disk:\n%s", b)
	}
	person := filepath.Join(t.TempDir(), "ana.md")
	os.WriteFile(person, []byte("---\nid: 01KAK3J7Y0Q2V5S8WZ3C9D4E6G\ntitle: Ana\ntype: person\ntags: [family]\n---\nMy sister.\n"), 0o600)
	if r := mem("", "write", "--file", person, "knowledge/people/ana.md"); r.code != 0 {
		t.Fatalf("write --file: %v", r)
	}
	if r := mem("", "edit", path, "--append", "And basil.", "--tag", "food", "--reason", "more plants"); r.code != 0 {
		t.Fatalf("edit: %v", r)
	}
	if r := mem("", "read", path); r.code != 0 || !strings.Contains(r.stdout, "Tomatoes on the balcony.\nAnd basil.\n") {
		t.Errorf("read: %v", r)
	}
	if r := mem("", "read", path, "--at", first); r.code != 0 || r.stdout != note {
		t.Errorf("read --at %s: %v", first, r)
	}
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"list", "--prefix", "knowledge/p"}, []string{"knowledge/people/ana.md", path}},
		{[]string{"list", "--type", "person"}, []string{"knowledge/people/ana.md"}},
		{[]string{"list", "--tag", "food"}, []string{path}},
		{[]string{"list", "--prefix", "knowledge/projects/"}, []string{path}},
	} {
		r := mem("", tc.args...)
		var got []string
		for _, l := range lines(r.stdout) {
			got = append(got, strings.Fields(l)[0])
		}
		if r.code != 0 || strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("%v: %v\nwant %v", tc.args, r, tc.want)
		}
	}
	if r := mem("", "delete", path, "--reason", "no garden now"); r.code != 0 {
		t.Fatalf("delete: %v", r)
	}
	if r := mem("", "list", "--status", "deprecated"); r.code != 0 || !strings.HasPrefix(r.stdout, path) {
		t.Errorf("list --status deprecated: %v", r)
	}
	if r := mem("", "delete", "--hard", path); r.code != 0 {
		t.Fatalf("delete --hard: %v", r)
	}
	if _, err := os.Stat(filepath.Join(root, path)); !os.IsNotExist(err) {
		t.Errorf("delete --hard left the file: %v", err)
	}
	r = mem("", "history", path)
	ls := lines(r.stdout)
	if r.code != 0 || len(ls) != 4 || !strings.Contains(ls[0], "owner") || !strings.Contains(ls[0], "delete") ||
		!strings.Contains(ls[1], "deprecate") || !strings.Contains(ls[1], "no garden now") || !strings.Contains(ls[3], "my garden") ||
		!strings.HasPrefix(ls[3], first[:12]) {
		t.Errorf("history: %v", r)
	}
	if r := mem("", "history", "-n", "1", path); r.code != 0 || len(lines(r.stdout)) != 1 {
		t.Errorf("history -n 1: %v", r)
	}
	if r := mem("not a note\n", "write", "knowledge/bad.md"); r.code != 1 || !strings.Contains(r.stderr, "does not parse") {
		t.Errorf("a malformed note: %v\nwant exit 1, does not parse", r)
	}
	if r := mem("", "read", "knowledge/none.md"); r.code != 1 || !strings.Contains(r.stderr, "does not exist") {
		t.Errorf("read a missing file: %v\nwant exit 1", r)
	}

	out := filepath.Join(t.TempDir(), "backup.tar.gz")
	if r := mem("", "export", out); r.code != 0 || !strings.Contains(r.stdout, "to "+out) {
		t.Errorf("export: %v", r)
	}
	if st, err := os.Stat(out); err != nil || st.Size() == 0 {
		t.Errorf("the export: %v", err)
	}
	if r := mem("", "purge", "threads"); r.code != 2 || !strings.Contains(r.stderr, "--confirm") {
		t.Errorf("purge threads without --confirm: %v\nwant exit 2", r)
	}
	if r := mem("", "purge", "knowledge", "--reason", "start over"); r.code != 0 || !strings.Contains(r.stdout, "purged knowledge: ") || !strings.Contains(r.stdout, " files (commit ") {
		t.Errorf("purge knowledge: %v", r)
	}
	if r := mem("", "list", "--prefix", "knowledge/p"); r.code != 0 || !strings.Contains(r.stdout, "no notes match") {
		t.Errorf("list after the purge: %v", r)
	}
	if r := mem("", "purge", "frob"); r.code != 1 || !strings.Contains(r.stderr, "unknown layer") {
		t.Errorf("purge an unknown layer: %v\nwant exit 1", r)
	}
}
