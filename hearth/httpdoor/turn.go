package httpdoor

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/mnemo/mnemo/hearth"
	"github.com/mnemo/mnemo/memory"
)

// turnEvent is one thing that happened in the turn a request sent: a
// chunk of the reply, a tool call, or its result.
type turnEvent struct {
	Text     string
	Call     *toolCall
	Result   *toolResult
	Thinking bool // the model is thinking again after tools
}

type toolCall struct {
	ID, Name string
	Args     json.RawMessage
}

type toolResult struct {
	ID, Output, Error string
}

// turnEnd is how a turn ended: its reply, or the core's problem.
type turnEnd struct {
	TurnID, ReplyID string
	Text            string
	Model           string
	Usage           *hearth.Usage
	Problem         *hearth.Problem // nil when the reply is whole
	Tools           int
	FirstToken      time.Duration // from the turn's stored message
}

// errTurnOver stops the subscription once the turn has ended.
var errTurnOver = errors.New("turn over")

// runTurn sends content as a turn of conversation conv ("": main) under
// ref, from the identity ctx carries and answered by model when not nil
// (for this turn only), and follows it in the core's events: the
// subscription is registered before the message is queued, so nothing of the turn is missed. emit is
// called for each chunk and tool of this turn only (turns are answered one
// at a time, so everything between the turn's stored message and its
// reply is its own). It returns when the reply is stored or the turn
// failed; a *hearth.Problem refusing the message before it was queued is
// returned as the error.
func (d *Door) runTurn(ctx context.Context, conv, ref, content string, model hearth.Model, emit func(turnEvent) error) (turnEnd, error) {
	sub, err := d.core.Subscribe(hearth.WatchOptions{
		Classes:      hearth.ClassTurns | hearth.ClassTokens | hearth.ClassActivity | hearth.ClassProblems,
		Name:         "http " + ref,
		Conversation: conv,
	})
	var p *hearth.Problem
	if errors.As(err, &p) {
		return turnEnd{}, err // the conversation is unknown
	}
	if err != nil {
		return turnEnd{}, errShuttingDown
	}
	defer sub.Close()
	if err := d.core.SendWith(ctx, ref, content, hearth.SendOptions{Conversation: conv, Model: model}); err != nil {
		return turnEnd{}, err
	}
	var (
		end    turnEnd
		mine   bool      // our message is stored: what follows is ours
		stored time.Time // when we saw it
	)
	err = sub.Run(ctx, func(batch []hearth.Event) error {
		for _, ev := range batch {
			switch e := ev.(type) {
			case *hearth.TurnStored:
				if e.Ref != ref {
					continue
				}
				if !mine && e.Record.Role == memory.RoleUser {
					mine, stored, end.TurnID = true, time.Now(), e.Record.ID
				}
			case *hearth.Token:
				if !mine || e.Text == "" {
					continue
				}
				if end.FirstToken == 0 {
					end.FirstToken = time.Since(stored)
				}
				if err := emit(turnEvent{Text: e.Text}); err != nil {
					return err
				}
			case *hearth.ToolStarted:
				if !mine {
					continue
				}
				end.Tools++
				if err := emit(turnEvent{Call: &toolCall{ID: e.ID, Name: e.Name, Args: e.Args}}); err != nil {
					return err
				}
			case *hearth.ToolOutcome:
				if !mine || e.Record.Tool == nil {
					continue
				}
				r := &toolResult{ID: e.Record.Tool.CallID, Output: e.Record.Text}
				if e.Record.Tool.Error != "" {
					// What the tool said stays in the journal; the stream
					// carries a fixed message (ARCH-6).
					r.Output, r.Error = "", msgToolFailed
				}
				if err := emit(turnEvent{Result: r}); err != nil {
					return err
				}
			case *hearth.ReplyDone:
				if !mine {
					continue
				}
				end.ReplyID, end.Text, end.Model, end.Usage = e.Record.ID, e.Record.Text, e.Model, e.Usage
				if !e.Record.Incomplete {
					return errTurnOver
				}
				// Cut short: the turn's problem follows at once.
			case *hearth.Problem:
				if e.Ref != ref || e.Code == hearth.CodeToolError {
					continue // a failed tool: the model is told and goes on
				}
				p := *e
				end.Problem = &p
				return errTurnOver
			}
		}
		return nil
	})
	if errors.Is(err, errTurnOver) {
		return end, nil
	}
	if errors.Is(err, hearth.ErrShuttingDown) {
		end.Problem = &hearth.Problem{Code: hearth.CodeShuttingDown, Message: "hearth is shutting down"}
		return end, nil
	}
	if errors.Is(err, hearth.ErrLagging) {
		end.Problem = &hearth.Problem{Code: hearth.CodeSlowClient, Message: "the reply could not be delivered in time"}
		return end, nil
	}
	return end, err
}

const msgToolFailed = "the tool failed"
