package console

import (
	"fmt"
	"net/http"
	"time"
)

// keepAlive is how often a watching page is sent a comment, so that a
// proxy or the browser does not take a quiet stream for a dead one.
const keepAlive = 20 * time.Second

// handleWatch streams, as server-sent events, a "change" event each time
// something is recorded of the run the query names (run=ID), or of any
// run without one: a page that watches fetches itself again then. It
// looks at the journal's mark every Poll, which sees what any process
// records.
func (s *Server) handleWatch(w http.ResponseWriter, r *http.Request) {
	run := r.URL.Query().Get("run")
	select {
	case s.watchers <- struct{}{}:
		defer func() { <-s.watchers }()
	default:
		refuse(w, http.StatusServiceUnavailable, "too many pages watch this console: close some, or reload the page later")
		return
	}
	last, err := s.store.Mark(run)
	if err != nil {
		s.fail(w, err)
		return
	}
	rc := http.NewResponseController(w)
	// The stream lasts as long as the page: the server's read deadline
	// would end it.
	rc.SetReadDeadline(time.Time{})
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "retry: 2000\nevent: ready\ndata: %s\n\n", last)
	if err := rc.Flush(); err != nil {
		return
	}
	tick := time.NewTicker(s.opts.Poll)
	defer tick.Stop()
	quiet := time.Now()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
		}
		mark, err := s.store.Mark(run)
		if err != nil {
			s.opts.ErrorLog.Printf("console: watching the journal: %v", err)
			return
		}
		switch {
		case mark != last:
			last, quiet = mark, time.Now()
			fmt.Fprintf(w, "event: change\ndata: %s\n\n", mark)
		case time.Since(quiet) >= keepAlive:
			quiet = time.Now()
			fmt.Fprint(w, ": still watching\n\n")
		default:
			continue
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
}
