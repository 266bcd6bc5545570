package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/mnemo/mnemo/ipc"
)

// request sends msg on conn and reads until its reply: reply is called
// with each message that is not an error and returns true once it has
// taken the reply. An error about ref is returned as it is; an unknown
// message type means an older hearth, told as tooOld.
func request(ctx context.Context, conn *ipc.Conn, msg ipc.Msg, ref, tooOld string, reply func(ipc.Msg) (bool, error)) error {
	if err := conn.Send(msg); err != nil {
		return fmt.Errorf("send: %w", err)
	}
	for {
		m, err := conn.Recv(ctx)
		if err != nil {
			return fmt.Errorf("hearth closed the connection: %w", err)
		}
		if e, ok := m.(*ipc.Error); ok {
			if e.Code == ipc.CodeUnknownType {
				return errors.New(tooOld)
			}
			if e.Ref == ref {
				return e
			}
			continue
		}
		if done, err := reply(m); done || err != nil {
			return err
		}
	}
}
