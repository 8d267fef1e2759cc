package main

import (
	"flag"
	"strconv"
)

// The shell's drag and pdf commands.
var (
	runDrag = actionCmd("drag", "N [M] [--dx X] [--dy Y] ", "Drags element N onto element M, or by X, Y CSS pixels (right and down; negative: left and up), with real mouse events (and HTML5 drag events where the page starts a drag).", 1, 2,
		func(fs *flag.FlagSet) func([]string) (string, any, error) {
			dx := fs.Float64("dx", 0, "pixels to the right (negative: left)")
			dy := fs.Float64("dy", 0, "pixels down (negative: up)")
			return func(pos []string) (string, any, error) {
				i, err := index(pos[0], false)
				if err != nil {
					return "", nil, err
				}
				p := map[string]any{"index": i}
				if len(pos) == 2 {
					if *dx != 0 || *dy != 0 {
						return "", nil, usagef("drag onto element %s or by --dx/--dy, not both", pos[1])
					}
					to, err := index(pos[1], false)
					if err != nil {
						return "", nil, err
					}
					p["to_index"] = to
					return "drag", p, nil
				}
				if *dx == 0 && *dy == 0 {
					return "", nil, usagef("drag needs a target element M, or --dx and/or --dy")
				}
				p["dx"], p["dy"] = *dx, *dy
				return "drag", p, nil
			}
		})
	runPDF = actionCmd("pdf", "[PAGES] ", `Prints the text of the PDF the tab shows: every page, page 3 ("3") or a range ("2-4"), each under a "page i of N" header.`, 0, 1,
		func(*flag.FlagSet) func([]string) (string, any, error) {
			return func(pos []string) (string, any, error) {
				if len(pos) == 0 {
					return "read_pdf", map[string]any{}, nil
				}
				if n, err := strconv.Atoi(pos[0]); err == nil {
					return "read_pdf", map[string]any{"page": n}, nil
				}
				return "read_pdf", map[string]any{"pages": pos[0]}, nil
			}
		})
)
