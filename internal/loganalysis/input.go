package loganalysis

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"os"
)

// maxLine is the longest line read, and the size of each of the two read buffers: a longer
// line is skipped and counted, so memory stays bounded whatever the input.
const maxLine = 1 << 20

// gzipMagic starts every gzip stream.
var gzipMagic = []byte{0x1f, 0x8b}

// reader reads the lines of the inputs one after the other, decompressing gzip ones, with two
// buffers reused for every input.
type reader struct {
	raw, text *bufio.Reader
	// tooLong counts the lines longer than maxLine, skipped.
	tooLong uint64
}

func newReader() *reader {
	return &reader{raw: bufio.NewReaderSize(nil, maxLine), text: bufio.NewReaderSize(nil, maxLine)}
}

// each calls fn with every line of in (without its line ending); gzip input, recognised by its
// magic bytes, is decompressed. The line is valid only during the call.
func (r *reader) each(in io.Reader, fn func(line []byte)) error {
	r.raw.Reset(in)
	src := r.raw
	if magic, _ := r.raw.Peek(len(gzipMagic)); bytes.Equal(magic, gzipMagic) {
		gz, err := gzip.NewReader(r.raw)
		if err != nil {
			return fmt.Errorf("reading gzip: %w", err)
		}
		defer gz.Close()
		r.text.Reset(gz)
		src = r.text
	}
	for {
		line, err := src.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			r.tooLong++
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = src.ReadSlice('\n')
			}
			if err == nil {
				continue
			}
			line = nil
		}
		if len(line) > 0 {
			fn(bytes.TrimRight(line, "\r\n"))
		}
		switch {
		case errors.Is(err, io.EOF):
			return nil
		case err != nil:
			return err
		}
	}
}

// eachFile calls fn with every line of each named file in order, "-" being stdin, or of stdin
// when there are no names. It reads every input it can: errors are reported to report, and
// eachFile says whether there were any.
func (r *reader) eachFile(names []string, stdin io.Reader, report io.Writer, fn func(line []byte)) (ok bool) {
	if len(names) == 0 {
		names = []string{"-"}
	}
	ok = true
	for _, name := range names {
		if err := r.eachNamed(name, stdin, fn); err != nil {
			fmt.Fprintf(report, "%s: %v\n", name, err)
			ok = false
		}
	}
	return ok
}

func (r *reader) eachNamed(name string, stdin io.Reader, fn func(line []byte)) error {
	if name == "-" {
		return r.each(stdin, fn)
	}
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer func() { _ = f.Close() }() // read only: nothing to lose
	return r.each(f, fn)
}
