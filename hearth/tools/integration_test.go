package tools

// Integration tests against the reference MCP servers from npm, which no one
// here wrote. They run when MNEMO_MCP_NODE_MODULES names a node_modules
// directory holding @modelcontextprotocol/server-everything and
// @modelcontextprotocol/server-filesystem (`make test` installs them).

import (
	"bufio"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

const nodeModulesEnv = "MNEMO_MCP_NODE_MODULES"

// referenceServer returns node and the entry script of an npm MCP server
// package, skipping the test when the packages are not installed.
func referenceServer(t *testing.T, pkg string) (node, script string) {
	t.Helper()
	dir := os.Getenv(nodeModulesEnv)
	if dir == "" {
		t.Skipf("%s is not set: run `make test` to install the reference MCP servers and run these tests", nodeModulesEnv)
	}
	node, err := exec.LookPath("node")
	if err != nil {
		t.Fatalf("%s is set but node is not on PATH: %v", nodeModulesEnv, err)
	}
	pkgDir := filepath.Join(dir, "@modelcontextprotocol", pkg)
	data, err := os.ReadFile(filepath.Join(pkgDir, "package.json"))
	if err != nil {
		t.Fatalf("%s is set but @modelcontextprotocol/%s is not installed there: %v", nodeModulesEnv, pkg, err)
	}
	var meta struct {
		Bin json.RawMessage `json:"bin"`
	}
	if err := json.Unmarshal(data, &meta); err != nil {
		t.Fatalf("%s/package.json: %v", pkg, err)
	}
	// "bin" is a path, or a map of command names to paths.
	var one string
	var many map[string]string
	switch {
	case json.Unmarshal(meta.Bin, &one) == nil && one != "":
		script = one
	case json.Unmarshal(meta.Bin, &many) == nil && len(many) == 1:
		for _, p := range many {
			script = p
		}
	default:
		t.Fatalf("%s/package.json: cannot tell the entry point from bin %s", pkg, meta.Bin)
	}
	return node, filepath.Join(pkgDir, script)
}

func TestReferenceEverythingStdio(t *testing.T) {
	node, script := referenceServer(t, "server-everything")
	g := newGateway(t)
	g.set(map[string]any{"label": "everything", "command": node, "args": []string{script, "stdio"}})
	r := newTestRegistry(t, Options{GatewayPath: g.path})
	checkEverything(t, r)
}

func TestReferenceEverythingStreamableHTTP(t *testing.T) {
	node, script := referenceServer(t, "server-everything")
	endpoint := startEverythingHTTP(t, node, script)
	token := randomToken(t)
	g := newGateway(t)
	g.set(httpEntry("everything", endpoint, map[string]string{"Authorization": "Bearer ${MCP_AUTH_TOKEN}"}))
	log, logs := testLog()
	r := newTestRegistry(t, Options{GatewayPath: g.path, Log: log, Getenv: envMap(map[string]string{"MCP_AUTH_TOKEN": token})})
	checkEverything(t, r)
	if strings.Contains(logs.String(), token) {
		t.Errorf("the log contains the token")
	}
}

// checkEverything lists server-everything's tools and calls echo.
func checkEverything(t *testing.T, r *Registry) {
	t.Helper()
	specs, err := r.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	echo, ok := specByName(specs, "everything__echo")
	if !ok {
		t.Fatalf("everything__echo not listed; got %v", specNames(specs))
	}
	if len(specs) < 5 {
		t.Errorf("only %d tools listed: %v", len(specs), specNames(specs))
	}
	if echo.Effect != ReadOnly || echo.Permission != Safe || echo.Source != "mcp:everything" || echo.Description == "" {
		t.Errorf("echo spec = %+v; want a described read-only, safe tool from mcp:everything", echo)
	}
	var schema struct {
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
	}
	if err := json.Unmarshal(echo.Parameters, &schema); err != nil || schema.Properties["message"] == nil || schema.Properties[ReasonParam] == nil {
		t.Errorf("echo parameters = %s; want the server's message and our reason", echo.Parameters)
	}
	res, err := r.Call(t.Context(), "everything__echo", json.RawMessage(`{"message":"hello from mnemo"}`))
	if err != nil || res != (Result{Text: "Echo: hello from mnemo"}) {
		t.Errorf("Call(everything__echo) = %+v, %v", res, err)
	}
	// The server validates its arguments: a wrong call is an error result,
	// and the session goes on.
	res, err = r.Call(t.Context(), "everything__echo", json.RawMessage(`{"msg":1}`))
	if err != nil || !res.IsError {
		t.Errorf("Call(everything__echo) with bad arguments = %+v, %v; want an error result", res, err)
	}
	res, err = r.Call(t.Context(), "everything__echo", json.RawMessage(`{"message":"again"}`))
	if err != nil || res.Text != "Echo: again" {
		t.Errorf("Call(everything__echo) after a bad call = %+v, %v", res, err)
	}
}

// startEverythingHTTP runs server-everything over streamable HTTP on a free
// port and returns its endpoint once it listens. The server takes its port
// from the environment, so the port is found free, closed and handed over:
// when something took it meanwhile, it tries another.
func startEverythingHTTP(t *testing.T, node, script string) string {
	t.Helper()
	for range 3 {
		if url, ok := tryEverythingHTTP(t, node, script); ok {
			return url
		}
	}
	t.Fatal("server-everything found its port taken three times")
	return ""
}

// tryEverythingHTTP is one attempt of startEverythingHTTP; ok is false
// when the port it chose was taken before the server listened.
func tryEverythingHTTP(t *testing.T, node, script string) (url string, ok bool) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	cmd := exec.Command(node, script, "streamableHttp")
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready, drained := make(chan struct{}), make(chan struct{})
	var output strings.Builder // read only after drained
	go func() {
		defer close(drained)
		sc := bufio.NewScanner(stderr)
		signalled := false
		for sc.Scan() {
			if output.Len() < 8<<10 {
				output.WriteString(sc.Text() + "\n")
			}
			if !signalled && strings.Contains(sc.Text(), "listening on port") {
				signalled = true
				close(ready)
			}
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-drained
		_ = cmd.Wait()
	})
	select {
	case <-ready:
	case <-drained:
		if strings.Contains(output.String(), "already in use") {
			t.Logf("port %d taken before server-everything listened; trying another", port)
			return "", false
		}
		t.Fatalf("server-everything exited before listening:\n%s", output.String())
	case <-time.After(60 * time.Second):
		t.Fatalf("server-everything did not listen on port %d within 60s", port)
	}
	return "http://127.0.0.1:" + strconv.Itoa(port) + "/mcp", true
}

func TestReferenceFilesystem(t *testing.T) {
	node, script := referenceServer(t, "server-filesystem")
	root := t.TempDir()
	if err := os.WriteFile(filepath.Join(root, "a.txt"), []byte("alpha\nbeta\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(root, "sub"), 0o700); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(t.TempDir(), "secret.txt")
	if err := os.WriteFile(outside, []byte("not yours"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newGateway(t)
	g.set(map[string]any{"label": "fs", "command": node, "args": []string{script, root}})
	r := newTestRegistry(t, Options{GatewayPath: g.path})
	specs, err := r.List(t.Context())
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	for _, tc := range []struct {
		name   string
		effect Effect
		perm   Permission
	}{
		{"fs__list_directory", ReadOnly, Safe},
		{"fs__read_text_file", ReadOnly, Safe},
		{"fs__read_file", ReadOnly, Safe},
		{"fs__write_file", "", Confirm}, // writes: never safe, whatever its effect
	} {
		s, ok := specByName(specs, tc.name)
		if !ok {
			t.Errorf("%s not listed; got %v", tc.name, specNames(specs))
			continue
		}
		if (tc.effect != "" && s.Effect != tc.effect) || s.Permission != tc.perm {
			t.Errorf("%s: effect %s, permission %s; want %s, %s", tc.name, s.Effect, s.Permission, tc.effect, tc.perm)
		}
	}

	call := func(name string, args any) Result {
		t.Helper()
		b, _ := json.Marshal(args)
		res, err := r.Call(t.Context(), name, b)
		if err != nil {
			t.Fatalf("Call(%s): %v", name, err)
		}
		return res
	}
	if res := call("fs__list_directory", map[string]string{"path": root}); res.IsError || !strings.Contains(res.Text, "[FILE] a.txt") || !strings.Contains(res.Text, "[DIR] sub") {
		t.Errorf("list_directory = %+v; want a.txt and sub", res)
	}
	for _, tool := range []string{"fs__read_text_file", "fs__read_file"} {
		if res := call(tool, map[string]string{"path": filepath.Join(root, "a.txt")}); res.IsError || res.Text != "alpha\nbeta\n" {
			t.Errorf("%s = %+v; want the file's contents", tool, res)
		}
	}
	if res := call("fs__read_text_file", map[string]string{"path": outside}); !res.IsError || strings.Contains(res.Text, "not yours") {
		t.Errorf("read outside the root = %+v; want an error result", res)
	}
}

// TestReferenceAddRemove adds and removes a real server in gateway.json
// between List calls: no restart, and the removed server's process ends.
func TestReferenceAddRemove(t *testing.T) {
	node, script := referenceServer(t, "server-everything")
	g := newGateway(t)
	r := newTestRegistry(t, Options{GatewayPath: g.path, Builtins: []Builtin{CurrentTime(time.Now)}})
	list := func() []string {
		t.Helper()
		specs, err := r.List(t.Context())
		if err != nil {
			t.Fatalf("List: %v", err)
		}
		return specNames(specs)
	}
	g.set()
	if got := list(); len(got) != 1 {
		t.Fatalf("before: %v; want only current_time", got)
	}
	g.set(map[string]any{"label": "everything", "command": node, "args": []string{script, "stdio"}})
	if got := list(); !strings.Contains(strings.Join(got, " "), "everything__echo") {
		t.Fatalf("after adding: %v; want everything__echo", got)
	}
	s := poolServer(r, "everything")
	cmd := stdioCmd(s)
	g.set()
	if got := list(); len(got) != 1 {
		t.Fatalf("after removing: %v; want only current_time", got)
	}
	waitGone(t, s)
	if cmd.ProcessState == nil {
		t.Errorf("the removed server's process was not reaped")
	}
}
