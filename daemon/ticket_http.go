package daemon

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/narrowd/narrowd/daemon/hookclient"
	"github.com/narrowd/narrowd/sandbox"
)

// The ticket protocol on the Unix socket (`narrowd exec --ticket T`) is
// defined in hookclient, which narrowd exec uses before the rest of
// narrowd starts.

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	json.NewEncoder(w).Encode(v)
}

func readSmall(w http.ResponseWriter, r *http.Request, v any) error {
	return json.NewDecoder(http.MaxBytesReader(w, r.Body, 4096)).Decode(v)
}

// serveExecClaim takes a ticket for the calling wrapper. The ticket is
// gone from the store once this runs, whatever the result: a refused
// claim cannot be retried.
func (s *Server) serveExecClaim(w http.ResponseWriter, r *http.Request) {
	refuse := func(err error) {
		s.log.Warn("refused a sandbox ticket", "err", err)
		writeJSON(w, http.StatusForbidden, hookclient.ExecRefusal{Error: err.Error()})
	}
	if s.tickets == nil {
		refuse(errors.New("this daemon issues no sandbox tickets"))
		return
	}
	var req hookclient.ClaimRequest
	if err := readSmall(w, r, &req); err != nil || req.Ticket == "" {
		refuse(errors.New("malformed ticket claim"))
		return
	}
	pid, pfd, err := peerProcess(r)
	if err != nil {
		s.tickets.take(req.Ticket, 0, -1) // the ticket dies
		refuse(err)
		return
	}
	cid, c, err := s.tickets.take(req.Ticket, pid, pfd)
	if err != nil {
		closeFD(pfd)
		refuse(err)
		return
	}
	if err := sandbox.SameExecutable(pid, s.tickets.exes...); err != nil {
		if c, err := s.tickets.takeClaim(cid); err == nil {
			closeFD(c.wrapperFD)
		}
		refuse(fmt.Errorf("the program redeeming the ticket is not narrowd: %w", err))
		return
	}
	overlay, err := s.tickets.prepareUndo(c, s.cfg.now())
	if err != nil {
		if c, err := s.tickets.takeClaim(cid); err == nil {
			closeFD(c.wrapperFD)
		}
		refuse(err)
		return
	}
	writeJSON(w, http.StatusOK, hookclient.ExecClaim{Claim: cid, Cwd: c.t.cwd, Writable: c.t.writable,
		Protected: s.tickets.protected, Own: s.tickets.own, HomeAllow: s.tickets.homeAllow, Overlay: overlay})
}

// serveExecVerify checks the wrapper's held sandbox from outside, records
// the result in the audit log, and only then releases the command text.
func (s *Server) serveExecVerify(w http.ResponseWriter, r *http.Request) {
	refuse := func(err error) {
		s.log.Warn("sandbox check failed; nothing runs", "err", err)
		writeJSON(w, http.StatusForbidden, hookclient.ExecRefusal{Error: err.Error()})
	}
	if s.tickets == nil {
		refuse(errors.New("this daemon issues no sandbox tickets"))
		return
	}
	var req hookclient.VerifyRequest
	if err := readSmall(w, r, &req); err != nil || req.Claim == "" {
		refuse(errors.New("malformed sandbox check request"))
		return
	}
	c, err := s.tickets.takeClaim(req.Claim)
	if err != nil {
		refuse(err)
		return
	}
	defer closeFD(c.wrapperFD)
	pid, pfd, err := peerProcess(r)
	closeFD(pfd)
	var verr error
	facts := sandbox.Facts{}
	switch alive, aerr := pidfdAlive(c.wrapperFD); {
	case err != nil:
		verr = err
	case pid != c.wrapperPid:
		verr = fmt.Errorf("the check comes from pid %d, not the wrapper %d that claimed the ticket", pid, c.wrapperPid)
	case aerr != nil || !alive:
		verr = errors.New("the wrapper that claimed the ticket exited")
	case req.LandlockABI < 1:
		verr = errors.New("the sandbox reports no Landlock confinement")
	default:
		// What the sandbox must show, from the daemon's own look at the
		// workspace, not the wrapper's word.
		var want sandbox.Expect
		if want, verr = sandbox.ExpectFor(c.t.writable, s.tickets.protected, s.tickets.own); verr == nil {
			facts, verr = sandbox.Verify(req.Pid, c.wrapperPid, want, s.tickets.exes...)
		}
		if verr == nil {
			verr = checkOverlay(c, req.Pid)
		}
	}
	rec := sandboxRecord(c, facts, req.LandlockABI, verr, s.cfg.now(), undoEvidence(c)...)
	if err := s.audit.Append(rec); err != nil {
		s.metrics.auditErrors.Inc()
		refuse(errors.New("narrowd could not record the sandbox check"))
		return
	}
	if verr != nil {
		s.tickets.abandonRun(c)
		refuse(verr)
		return
	}
	reply := hookclient.VerifyReply{Command: c.t.command}
	if len(c.layers) > 0 {
		reply.ID = c.t.callID
		reply.Run = s.tickets.runs.add(&sandboxRun{callID: c.t.callID, wrapperPid: c.wrapperPid, t: c.t, started: s.cfg.now()}, s.cfg.now())
	}
	writeJSON(w, http.StatusOK, reply)
}
