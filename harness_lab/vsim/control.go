package main

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
)

// ControlHandler serves the control API: out-of-band host power, disk faults
// and the model's state. It is for the lab's emulators, not for vim clients.
func (s *Sim) ControlHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /hosts", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.hostsView())
	})
	mux.HandleFunc("POST /hosts/{host}/power", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			State string `json:"state"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		if body.State != "on" && body.State != "off" {
			writeError(w, http.StatusBadRequest, errors.New(`state must be "on" or "off"`))
			return
		}
		s.log.Printf("control: host %s power %s", r.PathValue("host"), body.State)
		if err := s.PowerHost(r.PathValue("host"), body.State == "on"); err != nil {
			writeError(w, http.StatusNotFound, err)
			return
		}
		writeJSON(w, http.StatusOK, s.hostsView())
	})
	mux.HandleFunc("POST /disks/{host}/{device...}", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			Fault   string  `json:"fault"`
			Seconds float64 `json:"seconds"`
		}
		if !readJSON(w, r, &body) {
			return
		}
		err := s.DiskFault(r.PathValue("host"), r.PathValue("device"), body.Fault, body.Seconds)
		var unknown errUnknown
		switch {
		case errors.As(err, &unknown):
			writeError(w, http.StatusNotFound, err)
		case err != nil:
			writeError(w, http.StatusBadRequest, err)
		default:
			writeJSON(w, http.StatusOK, s.State())
		}
	})
	mux.HandleFunc("GET /state", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, s.State())
	})
	return mux
}

func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	data, err := io.ReadAll(io.LimitReader(r.Body, 1<<16))
	if err == nil {
		err = json.Unmarshal(data, v)
	}
	if err != nil {
		writeError(w, http.StatusBadRequest, err)
		return false
	}
	return true
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, err error) {
	writeJSON(w, status, map[string]string{"error": err.Error()})
}

// HostView is one host in the control API.
type HostView struct {
	Name        string `json:"name"`
	Site        string `json:"site"`
	Power       string `json:"power"`
	Connection  string `json:"connection"`
	Maintenance bool   `json:"maintenance"`
	Witness     bool   `json:"witness"`
}

func (s *Sim) hostsView() []HostView {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []HostView
	for _, name := range s.vsan.HostOrder {
		h := s.hosts[name]
		v := HostView{Name: name, Site: h.site, Power: "on", Connection: "connected",
			Maintenance: h.maintenance, Witness: h.witness}
		if !h.powered {
			v.Power, v.Connection = "off", "notResponding"
		}
		out = append(out, v)
	}
	return out
}

// State is the whole model as GET /state reports it.
func (s *Sim) State() map[string]any {
	hosts := s.hostsView()
	s.mu.Lock()
	defer s.mu.Unlock()
	now := s.now()
	var disks []map[string]any
	for _, id := range s.vsan.DiskOrder {
		d := s.vsan.Disks[id]
		state := "healthy"
		if d.Fault != FaultNone {
			state = d.Fault
		}
		disks = append(disks, map[string]any{"host": d.Host, "device": d.Device, "uuid": d.UUID,
			"cache": d.Cache, "group": d.GroupUUID, "state": state})
	}
	var vms []map[string]any
	for _, vm := range s.sortedVMs() {
		power := "poweredOff"
		if vm.on {
			power = "poweredOn"
		}
		vms = append(vms, map[string]any{"name": vm.name, "node": vm.node, "site": vm.site, "host": vm.host,
			"power": power, "pending_restart": vm.pendingRestart})
	}
	var objects []map[string]any
	for _, obj := range s.vsan.Objects {
		var comps []map[string]any
		for _, c := range obj.Components {
			comps = append(comps, map[string]any{"uuid": c.UUID, "kind": c.Kind, "host": c.Host,
				"device": s.vsan.Disks[c.DiskUUID].Device, "state": s.vsan.State(c)})
		}
		objects = append(objects, map[string]any{"uuid": obj.UUID, "vm": obj.VM, "type": obj.Type, "components": comps})
	}
	var bytes int64
	var eta int64
	count := 0
	for _, so := range s.vsan.Syncing(now, "") {
		count++
		for _, c := range so.Components {
			bytes += c.BytesToSync
			eta = max(eta, c.ETA)
		}
	}
	health, reasons := s.vsan.Health(now)
	return map[string]any{
		"hosts": hosts, "disks": disks, "vms": vms, "objects": objects,
		"resync":         map[string]any{"objects": count, "bytes_to_sync": bytes, "eta_s": eta},
		"health":         map[string]any{"overall": health, "reasons": reasons},
		"repair_timer_s": int64(s.vsan.RepairTimer.Seconds()),
	}
}
