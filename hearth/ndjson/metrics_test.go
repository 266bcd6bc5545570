package ndjson

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/mnemo/mnemo/hearth/telemetry"
	"github.com/mnemo/mnemo/ipc"
)

// TestMetricsPerMessageType: the door records each message it handles by
// type, and a refused handshake as an auth failure.
func TestMetricsPerMessageType(t *testing.T) {
	reg := prometheus.NewRegistry()
	m := telemetry.New(reg)
	th := startHearth(t, "", func(c *testConfig) { c.Metrics = m })
	c := dial(t, th.addr)
	for _, ref := range []string{"a", "b"} {
		if err := c.Send(&ipc.Ping{Ref: ref}); err != nil {
			t.Fatal(err)
		}
	}
	recvUntil(t, c, func(msg ipc.Msg) bool { p, ok := msg.(*ipc.Pong); return ok && p.Ref == "b" })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := ipc.Dial(ctx, th.addr, ipc.DialOptions{Token: "wrong-token-0123456789", Client: "test"}); err == nil {
		t.Fatal("a wrong token connected")
	}
	got, err := testutil.GatherAndCount(reg, "mnemo_request_duration_seconds")
	if err != nil {
		t.Fatal(err)
	}
	if got != 1 {
		t.Errorf("%d request series, want 1 (ping)", got)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, mf := range mfs {
		seen[mf.GetName()] = true
		switch mf.GetName() {
		case "mnemo_request_duration_seconds":
			h := mf.Metric[0].Histogram
			if n := h.GetSampleCount(); n != 2 {
				t.Errorf("pings counted %d, want 2", n)
			}
			labels := map[string]string{}
			for _, l := range mf.Metric[0].Label {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["door"] != "ndjson" || labels["route"] != "ping" || labels["status"] != "ok" {
				t.Errorf("labels %v", labels)
			}
		case "mnemo_auth_failures_total":
			if v := mf.Metric[0].Counter.GetValue(); v != 1 {
				t.Errorf("auth failures %v, want 1", v)
			}
		}
	}
	if !seen["mnemo_auth_failures_total"] {
		t.Error("no auth failure recorded")
	}
}
