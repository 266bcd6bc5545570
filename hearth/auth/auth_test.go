package auth

import (
	"context"
	"testing"
)

func TestTokenEqual(t *testing.T) {
	tests := []struct {
		got, want string
		eq        bool
	}{
		{"secret-token-123", "secret-token-123", true},
		{"secret-token-124", "secret-token-123", false},
		{"secret", "secret-token-123", false},
		{"", "", false},
		{"", "x", false},
		{"x", "", false},
	}
	for _, tt := range tests {
		if got := TokenEqual(tt.got, tt.want); got != tt.eq {
			t.Errorf("TokenEqual(%q, %q) = %v, want %v", tt.got, tt.want, got, tt.eq)
		}
	}
}

func TestIdentityInContext(t *testing.T) {
	ctx := context.Background()
	if _, ok := From(ctx); ok {
		t.Fatal("a bare context carries an identity")
	}
	want := Identity{Subject: "laptop", Actor: ActorCollaborator, Device: "dev_1"}
	got, ok := From(WithIdentity(ctx, want))
	if !ok || got != want {
		t.Fatalf("From = %+v, %v; want %+v", got, ok, want)
	}
	if got.IsOwner() {
		t.Error("a collaborator is the owner")
	}
}
