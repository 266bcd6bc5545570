package tools

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/mnemo/mnemo/memory/vault"
)

// memory_read, memory_list and memory_history pass the model's arguments
// to the core's operation and render its answer; the core's refusal is
// the tool's error.
func TestVaultReadTools(t *testing.T) {
	var gotAt string
	read := MemoryRead(func(_ context.Context, path, at string) ([]byte, string, error) {
		if path != "knowledge/a.md" {
			return nil, "", errors.New(path + " does not exist")
		}
		gotAt = at
		if at != "" {
			return []byte("old"), "0123456789abcdef0123", nil
		}
		return []byte(strings.Repeat("x", maxReadText+10)), "", nil
	})
	var gotFilter vault.ListFilter
	list := MemoryList(func(_ context.Context, f vault.ListFilter) ([]vault.NoteInfo, error) {
		gotFilter = f
		return []vault.NoteInfo{{Path: "knowledge/a.md", Title: "A", Type: "person", Status: vault.Active, Tags: []string{"x", "y"}}, {Path: "knowledge/b.md", Err: "bad"}}, nil
	})
	var gotLimit int
	history := MemoryHistory(func(_ context.Context, path string, limit int) ([]vault.Change, error) {
		gotLimit = limit
		when := time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC)
		return []vault.Change{
			{Author: "owner", When: when, Subject: "vault: reject create knowledge/a.md", Ledger: []vault.Entry{{Op: vault.OpReject, Reason: "rejected by the owner"}}},
			{Commit: "0123456789abcdef0123", Author: "agent", When: when, Ledger: []vault.Entry{{Op: vault.OpCreate, Reason: "the owner said so"}}},
		}, nil
	})
	for _, tc := range []struct {
		name    string
		b       Builtin
		args    string
		wantErr bool
		want    []string
	}{
		{"read now, cut", read, `{"path":"knowledge/a.md"}`, false, []string{"knowledge/a.md as it is now:\nxxx", "[cut: the file is longer]"}},
		{"read at a version", read, `{"path":"knowledge/a.md","version":"0123abc"}`, false, []string{"knowledge/a.md at version 0123456789ab:\nold"}},
		{"read missing", read, `{"path":"knowledge/none.md"}`, true, []string{"does not exist"}},
		{"read bad args", read, `{"path":3}`, true, []string{"invalid arguments"}},
		{"list", list, `{"type":"person","status":"active","tag":"x","prefix":"knowledge/"}`, false, []string{"2 notes:", "- knowledge/a.md type=person status=active: A tags=x,y", "knowledge/b.md (does not parse"}},
		{"export", MemoryExport(func(context.Context) (string, int64, error) { return "/r/artifacts/exports/m.tar.gz", 42, nil }), `{}`, false, []string{"exported to /r/artifacts/exports/m.tar.gz (42 bytes)"}},
		{"export fails", MemoryExport(func(context.Context) (string, int64, error) { return "", 0, errors.New("disk full") }), `{}`, true, []string{"disk full"}},
		{"history", history, `{"path":"knowledge/a.md","limit":500}`, false, []string{"2 changes to knowledge/a.md", "version=uncommitted [2026-11-01T09:00:00Z] by owner: reject: rejected by the owner", "version=0123456789ab [2026-11-01T09:00:00Z] by agent: create: the owner said so"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.b.Run(t.Context(), []byte(tc.args))
			if err != nil || res.IsError != tc.wantErr {
				t.Fatalf("%+v, %v; want error %v", res, err, tc.wantErr)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Text, w) {
					t.Errorf("result %q lacks %q", res.Text, w)
				}
			}
		})
	}
	if gotAt != "0123abc" || gotFilter != (vault.ListFilter{Type: "person", Status: vault.Active, Tag: "x", Prefix: "knowledge/"}) || gotLimit != maxChanges {
		t.Errorf("passed at %q, filter %+v, limit %d", gotAt, gotFilter, gotLimit)
	}
}
