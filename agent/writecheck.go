package agent

import (
	"fmt"

	"github.com/browseragent/browseragent/events"
)

// writeCheck holds the done check: a done(success=true) while the run's
// last write request (a POST, PUT, PATCH or DELETE document, XHR or fetch
// an action caused) failed or is unconfirmed gets one warning back before
// it is accepted. Owned by the Run goroutine.
type writeCheck struct {
	last   *events.Request // the run's last write request, nil before one
	seq    int             // counts writes, so a warning names one write
	warned int             // seq of the write already warned about, 0: none
}

// observe records the write requests of the step's actions, in order:
// the pages' own (events.Request.Own), not a third-party script's.
func (w *writeCheck) observe(recs []ActionRecord) {
	for _, rec := range recs {
		for _, r := range rec.Requests {
			if r.Own && r.Write() && r.Verdictable() {
				w.last = &r
				w.seq++
			}
		}
	}
}

// forget drops the last write: a person finished a hand-off since, and
// their requests are not observed.
func (w *writeCheck) forget() { w.last = nil }

// doubt says why the last write does not confirm success, "" when it
// does (or there was none).
func (w *writeCheck) doubt() string {
	r := w.last
	if r == nil {
		return ""
	}
	switch {
	case r.Failed():
		return r.Describe()
	case r.Unconfirmed():
		return r.Describe()
	}
	return ""
}

// checkDone applies the done check to the step's records, after its
// actions ran. A successful done whose claim the last write contradicts is
// held back the first time: its record's Done is cleared (the step is not
// done, and not a failure either: its Error stays empty) and the warning
// becomes its result text and a note, so the model reads it next step and
// it reaches the history and the trace. The warning is given once per
// write; a second done is accepted. On the forced last step (final, only
// done offered) there is no step left to answer, so the done is accepted
// and the warning only recorded. done(success=false) is never held back.
func (a *Agent) checkDone(item *HistoryItem, final bool) {
	a.writes.observe(item.Actions)
	for i := range item.Actions {
		rec := &item.Actions[i]
		if !rec.Result.Done || !rec.Result.Success || rec.Error != "" {
			continue
		}
		why := a.writes.doubt()
		if why == "" || a.writes.warned == a.writes.seq {
			return
		}
		a.writes.warned = a.writes.seq
		if final {
			item.Notes = append(item.Notes, a.secrets.scrub(fmt.Sprintf(
				"done(success=true) was accepted on the last step, though the last write request %s.", why)))
			return
		}
		warn := a.secrets.scrub(fmt.Sprintf(
			"done was not accepted yet: the last write request %s. Check the page for whether it worked; call done again to confirm.", why))
		rec.Result.Done = false
		rec.Result.Text = warn
		item.Notes = append(item.Notes, warn)
		return
	}
}
