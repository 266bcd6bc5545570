package tools

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/mnemo/mnemo/hearth/auth"
)

func TestAuthTools(t *testing.T) {
	const owner = "owner-token-xyz"
	st, err := auth.Open(auth.Options{Dir: t.TempDir(), OwnerToken: owner})
	if err != nil {
		t.Fatal(err)
	}
	pc, err := st.StartPairing(context.Background(), auth.ActorCollaborator)
	if err != nil {
		t.Fatal(err)
	}
	dev, devTok, err := st.Redeem(context.Background(), pc.Code, "phone")
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]Builtin{}
	for _, b := range AuthTools(st) {
		byName[b.Spec.Name] = b
	}
	ownerCtx := auth.WithIdentity(context.Background(), auth.Identity{Subject: "owner", Actor: auth.ActorOwner})
	phoneCtx := auth.WithIdentity(context.Background(), auth.Identity{Subject: "phone", Actor: auth.ActorCollaborator, Device: dev.ID})
	tests := []struct {
		name, tool, args string
		ctx              context.Context
		want             string
		isErr            bool
	}{
		{"whoami", "auth_whoami", `{}`, phoneCtx, `"actor": "collaborator"`, false},
		{"whoami without identity", "auth_whoami", `{}`, context.Background(), "no sender identity", false},
		{"check allow", "auth_check", `{"resource":"memory","action":"read"}`, phoneCtx, "phone read on memory: allow", false},
		{"check deny", "auth_check", `{"resource":"vault","action":"write"}`, phoneCtx, "phone write on vault: deny", false},
		{"check without identity", "auth_check", `{"resource":"memory","action":"read"}`, context.Background(), ": deny", false},
		{"export by owner", "auth_export", `{}`, ownerCtx, `"name": "phone"`, false},
		{"export by collaborator", "auth_export", `{}`, phoneCtx, "only the owner", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := byName[tt.tool].Run(tt.ctx, json.RawMessage(tt.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tt.isErr || !strings.Contains(res.Text, tt.want) {
				t.Fatalf("%s = %+v, want %q (error %v)", tt.tool, res, tt.want, tt.isErr)
			}
			for _, secret := range []string{owner, devTok, auth.HashToken(devTok), "token_sha256"} {
				if strings.Contains(res.Text, secret) {
					t.Errorf("%s leaks %q", tt.tool, secret)
				}
			}
		})
	}
}
