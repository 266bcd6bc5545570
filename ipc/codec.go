package ipc

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrLineTooLong is returned by Reader.Read for a line over the limit. The
// reader consumes the rest of that line before returning it, so a peer's
// write completes and an error sent back reaches it; the caller should
// then close the connection, as protocol v1 requires.
var ErrLineTooLong = errors.New("ipc: line exceeds the 1 MiB limit")

// SyntaxError reports a line that is not a JSON object with a string
// "type", or whose fields do not fit its type. The stream is still in
// step: the next Read returns the next line.
type SyntaxError struct {
	Type string // the type named by the line, if any
	Err  error
}

func (e *SyntaxError) Error() string {
	if e.Type != "" {
		return fmt.Sprintf("ipc: malformed %q message: %v", e.Type, e.Err)
	}
	return fmt.Sprintf("ipc: malformed message: %v", e.Err)
}

func (e *SyntaxError) Unwrap() error { return e.Err }

// UnknownTypeError reports a well-formed line of a type this side does not
// know. The stream is still in step.
type UnknownTypeError struct {
	Type string
}

func (e *UnknownTypeError) Error() string {
	return fmt.Sprintf("ipc: unknown message type %q", e.Type)
}

// Reader decodes NDJSON messages from a stream, one per line. Blank lines
// are skipped and a trailing "\r" is dropped, so typing into nc or telnet
// works.
type Reader struct {
	br  *bufio.Reader
	max int
	buf []byte // the current line; after an I/O error, the part read so far

	partial bool  // buf holds the start of a line cut by an I/O error
	skip    bool  // the rest of an oversize line is still to be consumed
	err     error // an error met while skipping, for the next call
}

// NewReader returns a Reader over r with the protocol's line limit.
func NewReader(r io.Reader) *Reader {
	return NewReaderSize(r, MaxLineBytes)
}

// NewReaderSize returns a Reader whose lines may hold at most max bytes.
func NewReaderSize(r io.Reader, max int) *Reader {
	return &Reader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// ReadLine returns the next non-blank line without its line ending. The
// slice is valid until the next call. At the end of the stream it returns
// io.EOF; a final line without a newline is returned as a line.
func (r *Reader) ReadLine() ([]byte, error) {
	for {
		line, err := r.readLine()
		if err != nil {
			return nil, err
		}
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		return line, nil
	}
}

func (r *Reader) readLine() ([]byte, error) {
	if err := r.err; err != nil {
		r.err = nil
		return nil, err
	}
	if r.skip {
		if err := r.discardLine(); err != nil {
			return nil, err
		}
	}
	if !r.partial {
		r.buf = r.buf[:0]
	}
	r.partial = false
	for {
		frag, err := r.br.ReadSlice('\n')
		if len(r.buf)+len(frag) > r.max+2 { // room for "\r\n"
			r.buf = r.buf[:0]
			switch {
			case errors.Is(err, bufio.ErrBufferFull): // the line goes on
				r.skip = true
				r.err = r.discardLine()
			case err != nil && !errors.Is(err, io.EOF): // it goes on after err
				r.skip = true
				r.err = err
			}
			return nil, ErrLineTooLong
		}
		r.buf = append(r.buf, frag...)
		switch {
		case err == nil, errors.Is(err, io.EOF) && len(r.buf) > 0:
			line := trimEOL(r.buf)
			if len(line) > r.max {
				return nil, ErrLineTooLong
			}
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			// Keep what was read: after a timeout the next call resumes
			// the same line instead of starting mid-line.
			r.partial = len(r.buf) > 0
			return nil, err
		}
	}
}

// discardLine consumes the rest of an oversize line, holding at most one
// buffer of it in memory. It returns nil once the line's newline has been
// read.
func (r *Reader) discardLine() error {
	for {
		_, err := r.br.ReadSlice('\n')
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == nil, errors.Is(err, io.EOF):
			r.skip = false
			return err
		default:
			return err
		}
	}
}

func trimEOL(b []byte) []byte {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return bytes.TrimSuffix(b, []byte("\r"))
}

// Read decodes the next message. Errors of type *SyntaxError and
// *UnknownTypeError leave the reader in step: the next Read returns the
// next line. So does ErrLineTooLong, but the connection should close. After
// an I/O error (a read deadline, say), the next Read resumes where the
// failed one stopped.
func (r *Reader) Read() (Msg, error) {
	line, err := r.ReadLine()
	if err != nil {
		return nil, err
	}
	return Decode(line)
}

// Decode parses one line (without its newline) into a message.
func Decode(line []byte) (Msg, error) {
	var env struct {
		Type *string `json:"type"`
	}
	if err := json.Unmarshal(line, &env); err != nil {
		var te *json.UnmarshalTypeError
		switch {
		case !errors.As(err, &te):
			return nil, &SyntaxError{Err: errors.New("invalid JSON")}
		case te.Field == "type":
			return nil, &SyntaxError{Err: errors.New(`"type" is not a string`)}
		default:
			return nil, &SyntaxError{Err: errors.New("not a JSON object")}
		}
	}
	if t := bytes.TrimLeft(line, " \t\r\n"); t[0] != '{' { // null
		return nil, &SyntaxError{Err: errors.New("not a JSON object")}
	}
	if env.Type == nil || *env.Type == "" {
		return nil, &SyntaxError{Err: errors.New(`missing "type"`)}
	}
	m := newMsg(*env.Type)
	if m == nil {
		return nil, &UnknownTypeError{Type: *env.Type}
	}
	if err := json.Unmarshal(line, m); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return nil, &SyntaxError{Type: *env.Type, Err: fmt.Errorf("field %q has the wrong type", te.Field)}
		}
		return nil, &SyntaxError{Type: *env.Type, Err: errors.New("invalid field")}
	}
	return m, nil
}

// Encode returns m as one NDJSON line, newline included. The "type" field
// comes first so that a line reads well in nc.
func Encode(m Msg) ([]byte, error) {
	if m == nil {
		return nil, errors.New("ipc: encode: nil message")
	}
	body, err := json.Marshal(m)
	if err != nil {
		return nil, fmt.Errorf("ipc: encode %s: %w", m.Type(), err)
	}
	if body[0] != '{' { // a nil *Token marshals as null
		return nil, fmt.Errorf("ipc: encode %s: not a JSON object: %.20s", m.Type(), body)
	}
	typ, err := json.Marshal(m.Type())
	if err != nil {
		return nil, fmt.Errorf("ipc: encode type: %w", err)
	}
	out := make([]byte, 0, len(body)+len(typ)+12)
	out = append(out, `{"type":`...)
	out = append(out, typ...)
	if len(body) > 2 { // not "{}"
		out = append(out, ',')
		out = append(out, body[1:]...)
	} else {
		out = append(out, '}')
	}
	out = append(out, '\n')
	if len(out)-1 > MaxLineBytes {
		return nil, fmt.Errorf("ipc: encode %s: %w", m.Type(), ErrLineTooLong)
	}
	return out, nil
}

// Writer encodes messages onto a stream, one line each, flushing after
// every message.
type Writer struct {
	bw *bufio.Writer
}

// NewWriter returns a Writer over w.
func NewWriter(w io.Writer) *Writer {
	return &Writer{bw: bufio.NewWriter(w)}
}

// Write encodes m and flushes it.
func (w *Writer) Write(m Msg) error {
	line, err := Encode(m)
	if err != nil {
		return err
	}
	if _, err := w.bw.Write(line); err != nil {
		return err
	}
	return w.bw.Flush()
}
