package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"text/tabwriter"

	"github.com/tiktoken-go/tokenizer/codec"

	"github.com/browseragent/browseragent/agent"
	"github.com/browseragent/browseragent/bus"
	"github.com/browseragent/browseragent/events"
)

// tokenizerName is the vocabulary the tokens command counts with: OpenAI's
// o200k (GPT-4o, GPT-4.1, o-series). Other providers' tokenizers differ by
// some percent; the parts' proportions hold.
const tokenizerName = "o200k_base"

// tokenPart is one row of the tokens command's table.
type tokenPart struct {
	Name   string `json:"name"`
	Role   string `json:"role,omitempty"`
	Tokens int    `json:"tokens"`
	Chars  int    `json:"chars"`
	// Fixed: the part is overhead every step pays whatever the task, page,
	// history, files and plan (agent.PromptPart.Fixed; the schema).
	Fixed bool `json:"fixed"`
	// ImageBytes is the screenshot's size as the loop would send it (its
	// format and bound for the model), ImageTokens what the image costs the
	// model by agent.ImageTokens (0 when the provider's rule is unknown);
	// Tokens includes ImageTokens.
	ImageBytes  int    `json:"image_bytes,omitempty"`
	ImageTokens int    `json:"image_tokens,omitempty"`
	ImageType   string `json:"image_type,omitempty"` // its media type, read from its bytes
}

// tokenReport is the tokens command's --json output.
type tokenReport struct {
	Tokenizer   string      `json:"tokenizer"`
	URL         string      `json:"url"`
	Parts       []tokenPart `json:"parts"`
	Schema      tokenPart   `json:"schema"`
	TotalTokens int         `json:"total_tokens"`
	FixedTokens int         `json:"fixed_tokens"`
	CacheKey    string      `json:"cache_key"`
}

func runTokens(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	fs := flag.NewFlagSet("tokens", flag.ContinueOnError)
	var bf browserFlags
	bf.register(fs)
	var af agentFlags
	af.register(fs, "whether the step carries a screenshot: on, auto or off (its bytes are shown, not counted as text tokens)")
	url := fs.String("url", "", "open this page first (default: the page the browser shows)")
	model := fs.String("model", "", "the model the prompt is for, as provider:name: it sizes the screenshot and prices its image tokens (default: unknown, the XGA bound and no image tokens)")
	asJSON := fs.Bool("json", false, "print the counts as JSON")
	show := fs.Bool("show", false, "also print the whole prompt, part by part, and the reply schema")
	fs.Usage = func() {
		fmt.Fprintln(stderr, `usage: browseragent tokens [flags] "task"`)
		fmt.Fprintln(stderr, "Prints the prompt the model would get on the first step of the task on the page, with o200k token counts per part, without calling a model.")
		fmt.Fprintln(stderr, "Coordinate clicks count as offered only with --coordinate-clicks on (no model is named here).")
		fs.PrintDefaults()
	}
	if err := parseFlags(fs, args, stderr); err != nil {
		return err
	}
	if fs.NArg() != 1 {
		return usagef("want the task as one argument")
	}
	var set agent.Settings
	if err := af.apply(&set, "", ""); err != nil {
		return err
	}
	shot, err := agent.ScreenshotOptions(set, *model)
	if err != nil {
		return usagef("%v", err)
	}
	s, err := startSession(ctx, &bf)
	if err != nil {
		return err
	}
	defer func() {
		if serr := stopSession(s); err == nil {
			err = serr
		}
	}()
	if *url != "" {
		if _, err := bus.Call(ctx, s.Bus(), events.NavigateToURL, events.NavigateToURLEvent{URL: *url}); err != nil {
			return err
		}
	}
	// The observation is the loop's: the screenshot in the format and
	// bound the loop asks for this model, taken when Vision says so
	// (VisionAuto: only on a page its text cannot show).
	st, err := bus.Call(ctx, s.Bus(), events.BrowserStateRequest, events.BrowserStateRequestEvent{IncludeDOM: true, IncludeScreenshot: set.Vision == agent.VisionOn || set.Vision == "", Screenshot: shot})
	if err != nil {
		return err
	}
	agent.AutoScreenshot(ctx, s.Bus(), set, shot, &st)
	p, err := agent.RenderPrompt(set, fs.Arg(0), &st)
	if err != nil {
		return err
	}
	rep, err := countPrompt(p, agent.ImageTokens(agent.ImageFamilyOf(*model), st.ScreenshotWidth, st.ScreenshotHeight, set.ScreenshotDetail))
	if err != nil {
		return err
	}
	rep.URL = st.URL
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	if *show {
		for _, pt := range p.Parts {
			fmt.Fprintf(stdout, "----- %s (%s) -----\n%s\n", pt.Name, pt.Role, pt.Text)
		}
		fmt.Fprintf(stdout, "----- schema -----\n%s\n\n", p.Schema.JSON)
	}
	return writeTokenTable(stdout, rep)
}

// countPrompt counts a rendered prompt's parts and schema with o200k, and
// the screenshot's image as imageTokens. "Fixed" sums the parts marked
// agent.PromptPart.Fixed and the schema.
func countPrompt(p *agent.Prompt, imageTokens int) (*tokenReport, error) {
	enc := codec.NewO200kBase()
	count := func(s string) (int, error) { return enc.Count(s) }
	rep := &tokenReport{Tokenizer: tokenizerName, CacheKey: p.CacheKey}
	for _, pt := range p.Parts {
		n, err := count(pt.Text)
		if err != nil {
			return nil, err
		}
		it, mt := 0, ""
		if len(pt.Image) > 0 {
			it, mt = imageTokens, http.DetectContentType(pt.Image)
			n += it
		}
		rep.Parts = append(rep.Parts, tokenPart{Name: pt.Name, Role: string(pt.Role), Tokens: n, Chars: len(pt.Text), Fixed: pt.Fixed, ImageBytes: len(pt.Image), ImageTokens: it, ImageType: mt})
		rep.TotalTokens += n
		if pt.Fixed {
			rep.FixedTokens += n
		}
	}
	n, err := count(string(p.Schema.JSON))
	if err != nil {
		return nil, err
	}
	rep.Schema = tokenPart{Name: "schema", Tokens: n, Chars: len(p.Schema.JSON), Fixed: true}
	rep.TotalTokens += n
	rep.FixedTokens += n
	return rep, nil
}

// writeTokenTable prints the parts, the schema and the totals.
func writeTokenTable(w io.Writer, rep *tokenReport) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "part\tmessage\ttokens\tchars\tfixed\t")
	for _, pt := range append(rep.Parts, rep.Schema) {
		role, fixed := pt.Role, ""
		if role == "" {
			role = "(schema)"
		}
		if pt.Fixed {
			fixed = "yes"
		}
		name := pt.Name
		if pt.ImageBytes > 0 {
			name += fmt.Sprintf(" (+ image, %d bytes, %d tokens)", pt.ImageBytes, pt.ImageTokens)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%s\t\n", name, role, pt.Tokens, pt.Chars, fixed)
	}
	fmt.Fprintf(tw, "total\t\t%d\t\t\t\n", rep.TotalTokens)
	fmt.Fprintf(tw, "fixed (every step)\t\t%d\t\t\t\n", rep.FixedTokens)
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "tokenizer %s; page %s; cache key %s\n", rep.Tokenizer, rep.URL, rep.CacheKey)
	return err
}
