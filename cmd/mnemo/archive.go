package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/mnemo/mnemo/hearth/config"
	"github.com/mnemo/mnemo/memory"
	"github.com/mnemo/mnemo/memory/archive"
)

const exportUsage = `usage: mnemo export [--root DIR] FILE
  Write the memory root (default: hearth's) to FILE, one .tar.gz that tar
  and git read without mnemo: the files as they are, the git history as a
  bundle, and a README.md on every folder and how to restore by hand.
  hearth may keep running. FILE - writes to standard output.`

const importUsage = `usage: mnemo import [--root DIR] FILE
  Restore an archive mnemo export wrote into a new memory root (default:
  hearth's, which must then be empty). Whatever could not be restored is
  listed, and the exit status is 1.`

// archiveFlags parses [--root DIR] FILE; root is the default from mnemo's
// own --root.
func archiveFlags(name, help string, args []string, root string, w io.Writer) (dir, file string, err error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(w)
	fs.Usage = func() { fmt.Fprintln(w, help) }
	fs.StringVar(&root, "root", root, "the memory root")
	if err := fs.Parse(args); err != nil {
		return "", "", usageError{err}
	}
	if fs.NArg() != 1 || fs.Arg(0) == "" {
		return "", "", usageError{errors.New(help)}
	}
	if root == "" {
		if root, err = defaultRoot(); err != nil {
			return "", "", err
		}
	}
	return root, fs.Arg(0), nil
}

// defaultRoot is the root hearth would use: its configuration's, else
// the default directory.
func defaultRoot() (string, error) {
	if cfg, err := config.Load(config.LoadOptions{}); err == nil && cfg.Root.Value != "" {
		return cfg.Root.Value, nil
	}
	return memory.DefaultDir()
}

// exportRoot is mnemo export.
func exportRoot(ctx context.Context, args []string, root string, stdout, stderr io.Writer) error {
	dir, file, err := archiveFlags("export", exportUsage, args, root, stderr)
	if err != nil {
		return err
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	var rep archive.Report
	if file == "-" {
		rep, err = archive.Export(ctx, dir, stdout, archive.Options{})
		stdout = stderr // the archive is on stdout: say what was done on stderr
	} else {
		rep, err = exportFile(ctx, dir, file)
	}
	if err != nil {
		return err
	}
	for _, n := range rep.Notes {
		fmt.Fprintln(stderr, "note:", n)
	}
	fmt.Fprintf(stdout, "exported %d files (%d bytes) and the git history (%d refs) of %s to %s\n", rep.Files, rep.Bytes, rep.Refs, dir, file)
	return nil
}

// exportFile writes the archive to file, whole or not at all (see
// archive.WriteFile).
func exportFile(ctx context.Context, dir, file string) (archive.Report, error) {
	return archive.WriteFile(ctx, dir, file, archive.Options{})
}

// importRoot is mnemo import.
func importRoot(ctx context.Context, args []string, root string, stdout, stderr io.Writer) error {
	dir, file, err := archiveFlags("import", importUsage, args, root, stderr)
	if err != nil {
		return err
	}
	var in io.Reader = os.Stdin
	if file != "-" {
		f, err := os.Open(file)
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	}
	rep, err := archive.Import(ctx, in, dir, archive.Options{})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "restored %d files (%d bytes) and the git history (%d refs) into %s\n", rep.Files, rep.Bytes, rep.Refs, dir)
	if len(rep.Gaps) == 0 {
		return nil
	}
	for _, g := range rep.Gaps {
		fmt.Fprintln(stderr, "gap:", g)
	}
	return fmt.Errorf("import: restored with %d gap(s), listed above", len(rep.Gaps))
}
