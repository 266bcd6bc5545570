package tools

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
)

// The forget tool asks the owner first, and passes the ids and purge on.
func TestForgetTool(t *testing.T) {
	var gotIDs []string
	var gotPurge bool
	b := Forget(func(_ context.Context, ids []string, purge bool) ([]string, []string, error) {
		gotIDs, gotPurge = ids, purge
		if ids[0] == "fail" {
			return nil, nil, errors.New("forget: no turn has that id")
		}
		return ids[:1], ids[1:], nil
	})
	if b.Spec.Permission != Confirm || b.Spec.Effect != Irreversible {
		t.Errorf("forget is %s/%s: it must ask the owner", b.Spec.Permission, b.Spec.Effect)
	}
	for _, tc := range []struct {
		name, args string
		wantErr    bool
		want       string
	}{
		{"forgets", `{"ids":["01A","01B"],"purge":true}`, false, "forgot 1 turn(s): 01A; no turn has these ids (or they were forgotten already): 01B; their text was erased from disk"},
		{"no ids", `{"ids":[]}`, true, "ids is empty"},
		{"refused", `{"ids":["fail"]}`, true, "no turn has that id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := b.Run(t.Context(), json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError != tc.wantErr || !strings.Contains(res.Text, tc.want) {
				t.Errorf("result = %+v, want error %v and %q", res, tc.wantErr, tc.want)
			}
		})
	}
	if !slices.Equal(gotIDs, []string{"fail"}) || gotPurge {
		t.Errorf("last call got %v, %v", gotIDs, gotPurge)
	}
}
