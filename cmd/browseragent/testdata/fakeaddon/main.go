// Command fakeaddon stands in for browseragent-temporal in the hand-off
// tests: it prints its arguments as one JSON line, copies stdin to stdout
// when asked, and exits with the code asked for.
//
//	fakeaddon [args...]      print {"args": [...]} and exit 0
//	--exit N                 exit with N
//	--stdin                  copy stdin to stdout before exiting
//	--wait-interrupt         print "ready", wait for SIGINT, print "interrupted", exit 3
//	--ignore-interrupt       print "ready" and ignore SIGINT (and wait to be killed)
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
)

func main() {
	args := os.Args[1:]
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{"args": args})
	code := 0
	for i, a := range args {
		switch a {
		case "--exit":
			if i+1 < len(args) {
				code, _ = strconv.Atoi(args[i+1])
			}
		case "--stdin":
			if _, err := io.Copy(os.Stdout, os.Stdin); err != nil {
				fmt.Fprintln(os.Stderr, err)
				os.Exit(1)
			}
		case "--wait-interrupt":
			c := make(chan os.Signal, 1)
			signal.Notify(c, os.Interrupt)
			fmt.Println("ready")
			<-c
			fmt.Println("interrupted")
			os.Exit(3)
		case "--ignore-interrupt":
			c := make(chan os.Signal, 1)
			signal.Notify(c, os.Interrupt)
			fmt.Println("ready")
			for range c { // every interrupt is ignored: only a kill ends it
			}
		}
	}
	fmt.Fprintln(os.Stderr, "fakeaddon: stderr line")
	os.Exit(code)
}
