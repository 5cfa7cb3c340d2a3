// Command gen writes generated Widget objects for hubspoke's benchmarks:
// one JSON object per line, or with -review one ConversionReview request
// holding them all. Use it to feed external load generators:
//
//	go run ./bench/gen -n 1000 -review -to example.com/v1 > review.json
package main

import (
	"bufio"
	"flag"
	"fmt"
	"os"

	"github.com/hubspoke/hubspoke/bench"
	"github.com/hubspoke/hubspoke/bench/widgetgen"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(2)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ContinueOnError)
	n := fs.Int("n", 100, "number of objects")
	seed := fs.Uint64("seed", 1, "random seed; the same seed gives the same objects")
	version := fs.String("version", "v1alpha1", "version of the generated objects: v1alpha1 or v1")
	extra := fs.Int("extra-fields", 0, "extra spec fields per object that no rule touches")
	review := fs.Bool("review", false, "write one ConversionReview request instead of one object per line")
	to := fs.String("to", "example.com/v1", "desiredAPIVersion of the review (with -review)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	objs, err := widgetgen.Generate(*n, widgetgen.Options{Seed: *seed, Version: *version, ExtraSpecFields: *extra})
	if err != nil {
		return err
	}
	w := bufio.NewWriter(os.Stdout)
	if *review {
		w.Write(bench.ReviewBody("bench-review", *to, objs))
		w.WriteByte('\n')
	} else {
		for _, o := range objs {
			w.Write(o)
			w.WriteByte('\n')
		}
	}
	if err := w.Flush(); err != nil {
		return fmt.Errorf("write objects: %w", err)
	}
	return nil
}
