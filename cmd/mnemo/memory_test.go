package main

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/mnemo/mnemo/ipc"
)

// memoryArgs builds each subcommand's request, with flags before or after
// the argument, and refuses what is not a command with a usage error.
func TestMemoryArgs(t *testing.T) {
	conf := 0.5
	for _, tc := range []struct {
		args    []string
		want    ipc.Msg
		content string
	}{
		{[]string{"list"}, &ipc.VaultList{}, ""},
		{[]string{"list", "--type", "person", "--status", "active", "--tag", "family", "--prefix", "knowledge/people/"},
			&ipc.VaultList{NoteType: "person", Status: "active", Tag: "family", Prefix: "knowledge/people/"}, ""},
		{[]string{"pending"}, &ipc.Proposals{}, ""},
		{[]string{"read", "knowledge/a.md", "--at", "abc123"}, &ipc.VaultRead{Path: "knowledge/a.md", At: "abc123"}, ""},
		{[]string{"read", "--at", "abc123", "knowledge/a.md"}, &ipc.VaultRead{Path: "knowledge/a.md", At: "abc123"}, ""},
		{[]string{"history", "-n", "5", "knowledge/a.md"}, &ipc.VaultHistory{Path: "knowledge/a.md", Limit: 5}, ""},
		{[]string{"write", "knowledge/a.md", "--reason", "mine"}, &ipc.VaultWrite{Op: "write", Path: "knowledge/a.md", Reason: "mine"}, "-"},
		{[]string{"write", "--file", "a.md", "knowledge/a.md"}, &ipc.VaultWrite{Op: "write", Path: "knowledge/a.md"}, "a.md"},
		{[]string{"edit", "knowledge/a.md", "--append", "more", "--tag", "x", "--tag", "y", "--confidence", "0.5", "--confirmed"},
			&ipc.VaultWrite{Op: "edit", Path: "knowledge/a.md", Patch: &ipc.VaultPatch{Append: "more", TagsAdd: []string{"x", "y"}, Confidence: &conf, Confirmed: true}}, ""},
		{[]string{"delete", "knowledge/a.md"}, &ipc.VaultWrite{Op: "delete", Path: "knowledge/a.md"}, ""},
		{[]string{"delete", "--hard", "knowledge/a.md"}, &ipc.VaultWrite{Op: "delete", Path: "knowledge/a.md", Hard: true}, ""},
		{[]string{"approve", "prop_1"}, &ipc.ProposalDecide{ID: "prop_1", Approve: true}, ""},
		{[]string{"approve", "prop_1", "--file", "mine.md"}, &ipc.ProposalDecide{ID: "prop_1", Approve: true}, "mine.md"},
		{[]string{"reject", "prop_1"}, &ipc.ProposalDecide{ID: "prop_1"}, ""},
		{[]string{"purge", "knowledge", "--reason", "r"}, &ipc.VaultPurge{Layer: "knowledge", Reason: "r"}, ""},
		{[]string{"purge", "--confirm", "threads"}, &ipc.VaultPurge{Layer: "threads", Confirm: true}, ""},
		{[]string{"export", "/tmp/x.tar.gz"}, &ipc.VaultExport{Path: "/tmp/x.tar.gz"}, ""},
		{[]string{"export"}, &ipc.VaultExport{}, ""},
	} {
		req, err := memoryArgs(tc.args)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if diff := cmp.Diff(tc.want, req.msg); diff != "" || req.content != tc.content {
			t.Errorf("%v: content %q, request (-want +got):\n%s", tc.args, req.content, diff)
		}
	}
	for _, args := range [][]string{
		{}, {"frob"}, {"list", "x"}, {"pending", "x"}, {"read"}, {"read", "a", "b"}, {"edit", "a"},
		{"edit", "a", "--confidence", "2"}, {"purge"}, {"purge", "threads"}, {"export", "a", "b"}, {"approve"}, {"list", "--frob"},
	} {
		var u usageError
		if _, err := memoryArgs(args); !errors.As(err, &u) {
			t.Errorf("%v: %v, want a usage error", args, err)
		}
	}
}
