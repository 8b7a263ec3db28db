// Command release makes what users install, without Docker: the manager's OCI image, built from
// the binaries `make image` compiles (no base image, nothing downloaded), pushed to a registry,
// and the installer manifest that pins it by digest. The Makefile runs it:
//
//	release image     --layout=dist/image --tar=dist/image.tar --name=IMG --binary=linux/amd64=PATH ...
//	release push      --layout=dist/image --image=IMG
//	release installer --layout=dist/image --image=IMG < kustomize output > dist/install.yaml
//	release extract   --layout=dist/image --platform=linux/amd64 --file=manager --out=PATH
//	release digest    --layout=dist/image
//	release check     --image=IMG
//	release preflight --version=vX.Y.Z --bundle-version=X.Y.Z
//
// It is a module of its own, so that the manager's go.mod does not carry go-containerregistry.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// command is a subcommand: its flags are bound to fs, and run does the work once they are
// parsed.
type command struct {
	summary string
	bind    func(fs *flag.FlagSet) func(ctx context.Context, stdin io.Reader, stdout io.Writer) error
}

var commands = map[string]command{
	"image":     {"build the image index from the manager binaries: an OCI layout and a tarball", bindImage},
	"push":      {"push the image index of an OCI layout to a registry", bindPush},
	"installer": {"pin the image by digest in the kustomize output on stdin, CRDs first", bindInstaller},
	"extract":   {"copy a file out of one platform's image of an OCI layout", bindExtract},
	"digest":    {"print the digest of the image index of an OCI layout", bindDigest},
	"check":     {"check that an image reference names a tag or a digest", bindCheck},
	"preflight": {"check that the checkout can be released as a version: clean, untagged, every version its", bindPreflight},
}

// run runs the subcommand args[0] and returns the exit status: 0, 1 when it failed, 2 for bad
// arguments.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 || commands[args[0]].bind == nil {
		fmt.Fprintln(stderr, "usage: release COMMAND [flags]")
		for _, name := range []string{"image", "push", "installer", "extract", "digest", "check", "preflight"} {
			fmt.Fprintf(stderr, "  %-10s %s\n", name, commands[name].summary)
		}
		return 2
	}
	fs := flag.NewFlagSet("release "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	do := commands[args[0]].bind(fs)
	if err := fs.Parse(args[1:]); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "release %s: unexpected arguments %v\n", args[0], fs.Args())
		return 2
	}
	if err := do(ctx, stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "release %s: %v\n", args[0], err)
		var bad badArgument
		if errors.As(err, &bad) {
			return 2
		}
		return 1
	}
	return 0
}

// badArgument is an error in the arguments: run exits with status 2, as the flag package does.
type badArgument struct{ error }

// badArgumentf returns a badArgument with the message.
func badArgumentf(format string, args ...any) error {
	return badArgument{fmt.Errorf(format, args...)}
}
