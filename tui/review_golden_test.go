package tui

import (
	"fmt"
	"testing"

	tea "github.com/charmbracelet/bubbletea"
	"github.com/charmbracelet/x/exp/golden"

	"github.com/mnemo/mnemo/ipc"
)

// The review panel's snapshots; regenerate with
//
//	go test ./tui -run TestReviewGolden -update
//
// The panel's first request is ref r1 (snapshot numbers refs from 1).
var reviewScenarios = []goldenScenario{
	{
		name: "empty", sizes: standard,
		events: func() []tea.Msg {
			return []tea.Msg{connected(), altR, &ipc.ProposalList{Ref: "r1"}}
		},
		wait: "nothing waits",
	},
	{
		name: "create", sizes: [][2]int{{80, 24}},
		events: func() []tea.Msg {
			return []tea.Msg{connected(), altR, &ipc.ProposalList{Ref: "r1", Proposals: []ipc.Proposal{propCreate}}}
		},
		wait: "drinks flat whites",
	},
	{
		name: "edit", sizes: standard,
		events: func() []tea.Msg {
			return []tea.Msg{connected(goldenHistory...), altR, &ipc.ProposalList{Ref: "r1", Proposals: []ipc.Proposal{propUpdate, propCreate}}}
		},
		wait: "Lisbon since November",
	},
	{
		name: "decided", sizes: [][2]int{{80, 24}},
		events: func() []tea.Msg {
			return []tea.Msg{
				connected(), altR, &ipc.ProposalList{Ref: "r1", Proposals: []ipc.Proposal{propCreate, propUpdate}},
				runes("a"),
				&ipc.ProposalDecided{ID: propCreate.ID, Path: propCreate.Path, Decision: "applied", Why: "approved by the owner", Commit: "4f1c2d3e5a6b", By: "owner", Ref: "r2"},
			}
		},
		wait: "review · 1 of 1",
	},
	{
		name: "notice", sizes: [][2]int{{80, 24}},
		events: func() []tea.Msg {
			return []tea.Msg{connected(goldenHistory[:2]...), &propCreate}
		},
		wait: "waiting for review",
	},
}

var altR = tea.KeyMsg{Type: tea.KeyRunes, Runes: []rune("r"), Alt: true}

func TestReviewGolden(t *testing.T) {
	for _, sc := range reviewScenarios {
		for _, size := range sc.sizes {
			t.Run(fmt.Sprintf("%s/%dx%d", sc.name, size[0], size[1]), func(t *testing.T) {
				frame := snapshot(t, sc, size[0], size[1])
				checkFrame(t, frame, size[0], size[1])
				golden.RequireEqual(t, []byte(frame))
			})
		}
	}
}
