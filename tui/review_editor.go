package tui

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
)

// editRun is the owner's editor on a temporary copy of a proposed file:
// a tea.ExecCommand, so that it runs with the terminal handed over and
// all its file work happens outside Update. Run leaves the saved text in
// edited and removes the copy.
type editRun struct {
	editor  []string // the command; the file's name is added
	content string
	ext     string // of the temporary file

	edited string

	stdin          io.Reader
	stdout, stderr io.Writer
}

func (e *editRun) SetStdin(r io.Reader)  { e.stdin = r }
func (e *editRun) SetStdout(w io.Writer) { e.stdout = w }
func (e *editRun) SetStderr(w io.Writer) { e.stderr = w }

// Run writes the copy, runs the editor on it and reads it back.
func (e *editRun) Run() (err error) {
	if len(e.editor) == 0 {
		return errors.New("no editor: set $VISUAL or $EDITOR")
	}
	f, err := os.CreateTemp("", "mnemo-review-*"+e.ext)
	if err != nil {
		return fmt.Errorf("temporary file: %w", err)
	}
	name := f.Name()
	defer func() {
		if rerr := os.Remove(name); rerr != nil && err == nil {
			err = fmt.Errorf("remove the temporary file: %w", rerr)
		}
	}()
	_, werr := f.WriteString(e.content)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("temporary file: %w", werr)
	}
	cmd := exec.Command(e.editor[0], append(e.editor[1:], name)...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = e.stdin, e.stdout, e.stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", e.editor[0], err)
	}
	b, err := os.ReadFile(name)
	if err != nil {
		return fmt.Errorf("read the edited file: %w", err)
	}
	e.edited = string(b)
	return nil
}

// editorCommand is the owner's editor: cmd if set, else $VISUAL, else
// $EDITOR, else vi; split into words (an editor such as "code -w").
func editorCommand(cmd string, getenv func(string) string) []string {
	for _, c := range []string{cmd, getenv("VISUAL"), getenv("EDITOR")} {
		if f := strings.Fields(c); len(f) > 0 {
			return f
		}
	}
	return []string{"vi"}
}
