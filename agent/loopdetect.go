package agent

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// loopDetector watches for repeated actions and an unchanging page. It only
// produces nudges for the prompt; it never blocks an action.
type loopDetector struct {
	window int
	levels []int
	hashes []string
	names  map[string]string // hash -> readable action
	pages  []string          // page hashes, one per step
}

func newLoopDetector(window int, levels []int) *loopDetector {
	ls := append([]int(nil), levels...)
	sort.Ints(ls)
	return &loopDetector{window: window, levels: ls, names: map[string]string{}}
}

// actionKey normalizes an action so that trivially different repeats
// (whitespace, case, word order in a search) hash the same.
func actionKey(c ActionCall) (string, bool) {
	switch c.Name {
	case "wait", "done", "go_back":
		return "", false
	}
	var p map[string]any
	_ = json.Unmarshal(c.Params, &p)
	str := func(k string) string {
		s, _ := p[k].(string)
		return strings.ToLower(strings.Join(strings.Fields(s), " "))
	}
	num := func(k string) string {
		if v, ok := p[k]; ok {
			return fmt.Sprint(v)
		}
		return ""
	}
	switch c.Name {
	case "click", "hover", "dropdown_options", "read_value":
		return c.Name + ":" + num("index"), true
	case "input":
		return "input:" + num("index") + ":" + str("text"), true
	case "navigate":
		return "navigate:" + strings.TrimRight(str("url"), "/"), true
	case "search":
		toks := strings.Fields(str("query"))
		sort.Strings(toks)
		return "search:" + str("engine") + ":" + strings.Join(toks, " "), true
	case "scroll":
		return "scroll:" + num("down") + ":" + num("index"), true
	}
	b, _ := json.Marshal(p) // map keys are sorted: canonical
	return c.Name + ":" + string(b), true
}

func (d *loopDetector) record(calls []ActionCall) {
	if d.window <= 0 {
		return
	}
	for _, c := range calls {
		k, ok := actionKey(c)
		if !ok {
			continue
		}
		sum := sha256.Sum256([]byte(k))
		h := hex.EncodeToString(sum[:6])
		d.names[h] = shorten(c.Name+" "+string(c.Params), 100)
		d.hashes = append(d.hashes, h)
		if len(d.hashes) > d.window {
			d.hashes = d.hashes[len(d.hashes)-d.window:]
		}
	}
}

func (d *loopDetector) recordPage(url, fingerprint, text string) {
	if d.window <= 0 {
		return
	}
	sum := sha256.Sum256([]byte(url + "\x00" + fingerprint + "\x00" + text))
	d.pages = append(d.pages, hex.EncodeToString(sum[:8]))
	if len(d.pages) > DefaultStagnationSteps {
		d.pages = d.pages[len(d.pages)-DefaultStagnationSteps:]
	}
}

// nudge returns the prompt note for the current window, or "".
func (d *loopDetector) nudge() string {
	if d.window <= 0 {
		return ""
	}
	counts := map[string]int{}
	top, topN := "", 0
	for _, h := range d.hashes {
		counts[h]++
		if counts[h] > topN {
			top, topN = h, counts[h]
		}
	}
	var notes []string
	level := -1
	for i, l := range d.levels {
		if topN >= l {
			level = i
		}
	}
	switch {
	case level < 0:
	case level == 0:
		notes = append(notes, fmt.Sprintf("LOOP CHECK: you repeated the same action %d times in your last %d actions (%s). If it is not working, try a different approach.", topN, len(d.hashes), d.names[top]))
	case level == 1:
		notes = append(notes, fmt.Sprintf("LOOP WARNING: the same action ran %d times in your last %d actions (%s). It is not making progress: change your approach (another element, another page, scroll, search) or call done with what you have.", topN, len(d.hashes), d.names[top]))
	default:
		notes = append(notes, fmt.Sprintf("LOOP ALERT: the same action ran %d times in your last %d actions (%s). Stop repeating it. Do something different now, or call done with success=false and explain what blocked you.", topN, len(d.hashes), d.names[top]))
	}
	if len(d.pages) >= DefaultStagnationSteps {
		same := true
		for _, p := range d.pages[1:] {
			if p != d.pages[0] {
				same = false
				break
			}
		}
		if same {
			notes = append(notes, fmt.Sprintf("The page has not changed for %d steps. Your actions are not having an effect; try something different.", len(d.pages)))
		}
	}
	return strings.Join(notes, "\n")
}
