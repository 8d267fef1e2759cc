package demosite

import "github.com/browseragent/browseragent/agent/llm/scripted"

// Task is the demo's task, without the site's address (the demo appends
// " The site is at URL/").
const Task = "Apply for the Senior Go Engineer position on the careers site: name Ada Lovelace, email ada@example.com, 5 to 10 years of Go experience, attach the CV file, agree to data processing, submit, and confirm that the application was received."

// CVName is the file name of the CV the demo uploads; CVText its content.
const (
	CVName = "cv-ada-lovelace.txt"
	CVText = "Ada Lovelace\nAnalyst, programmer, Go enthusiast.\n"
)

// Script is the demo's model: it applies for the Go job in 5 steps,
// uploading the file at cvPath. Elements are named by what a person sees
// (link text, placeholders, field names), never by index: the scripted
// model finds them in the same page text a real model reads.
func Script(cvPath string) []scripted.Step {
	return []scripted.Step{
		{
			Evaluation: "Start: the careers page lists open positions.",
			Memory:     "Task: apply for the Senior Go Engineer job.",
			NextGoal:   "Open the Senior Go Engineer posting.",
			Actions:    []scripted.Action{{Name: "click", Label: "Senior Go Engineer", Tag: "a"}},
		},
		{
			WaitFor:    "Apply for this job",
			Evaluation: "Success: the job posting is open.",
			NextGoal:   "Open the application form.",
			Actions:    []scripted.Action{{Name: "click", Label: "Apply for this job", Tag: "a"}},
		},
		{
			WaitFor:    "Submit application",
			Evaluation: "Success: the application form is shown.",
			Memory:     "Form fields: name, email, experience, CV, consent.",
			NextGoal:   "Fill in every field and attach the CV.",
			Actions: []scripted.Action{
				{Name: "input", Label: "Full name", Params: map[string]any{"text": "Ada Lovelace", "clear": true}},
				{Name: "input", Label: "you@example.com", Params: map[string]any{"text": "ada@example.com", "clear": true}},
				{Name: "select_dropdown", Label: "experience", Tag: "select", Params: map[string]any{"text": "5 to 10 years"}},
				{Name: "upload_file", Label: "cv", Tag: "input", Params: map[string]any{"path": cvPath}},
				{Name: "click", Label: "consent", Tag: "input"},
			},
		},
		{
			Evaluation: "Success: the fields are filled and the CV is attached.",
			NextGoal:   "Submit the application.",
			Actions:    []scripted.Action{{Name: "click", Label: "Submit application", Tag: "button"}},
		},
		{
			WaitFor:    "Application received",
			Evaluation: "Success: the site confirmed the application.",
			NextGoal:   "Report the result.",
			Actions: []scripted.Action{{Name: "done", Params: map[string]any{
				"success": true,
				"text":    "Applied for Senior Go Engineer as Ada Lovelace; the site answered \"Application received\".",
			}}},
		},
	}
}

// HealScript is what a healing model does on the Menu version when a replay
// cannot find "Apply for this job": one reply that opens the closed "More"
// menu, after which the recorded step's element is on the page again.
func HealScript() []scripted.Step {
	return []scripted.Step{{
		Evaluation: "Unknown: the Apply control is not on the page; a closed \"More\" menu may hold it.",
		NextGoal:   "Open the \"More\" menu to reveal \"Apply for this job\".",
		Actions:    []scripted.Action{{Name: "click", Label: "More", Tag: "summary"}},
	}}
}
