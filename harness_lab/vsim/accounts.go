package main

import (
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/vmware/govmomi/simulator"
	"github.com/vmware/govmomi/vim25/methods"
	"github.com/vmware/govmomi/vim25/mo"
	"github.com/vmware/govmomi/vim25/soap"
	"github.com/vmware/govmomi/vim25/types"
)

// Account is a vCenter user besides the administrator, holding one role: its privileges, granted
// on the root folder and propagated (the lab's model of a permission; a real vCenter can grant
// per entity). The stock simulator answers "granted" to every privilege question and enforces
// nothing; with an account, privilege questions about its sessions are answered from its role and
// the methods of methodPrivileges refuse it with NoPermission, as vCenter does.
type Account struct {
	Username    string   `json:"username"`
	PasswordEnv string   `json:"password_env"`
	Privileges  []string `json:"privileges"`
}

// methodPrivileges is the privilege each vim method the simulator routes requires on its entity,
// as the vSphere API reference lists it (pyVmomi's generated type information carries the same).
var methodPrivileges = map[string]string{
	"ShutdownHost_Task":         "privilege.ShutdownHost_Task",
	"RebootHost_Task":           "privilege.RebootHost_Task",
	"EnterMaintenanceMode_Task": "privilege.EnterMaintenanceMode_Task",
	"ExitMaintenanceMode_Task":  "privilege.ExitMaintenanceMode_Task",
	"ReconnectHost_Task":        "privilege.ReconnectHost_Task",
	"RelocateVM_Task":           "privilege.RelocateVM_Task",
	"PowerOnVM_Task":            "privilege.PowerOnVM_Task",
	"PowerOffVM_Task":           "privilege.PowerOffVM_Task",
	"UpdateVsan_Task":           "privilege.UpdateVsan_Task",
}

// sessions maps a session key to its user: HasPrivilegeOnEntities names the session it asks about.
type sessions struct {
	mu    sync.Mutex
	users map[string]string
}

func (s *sessions) note(key, user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.users == nil {
		s.users = map[string]string{}
	}
	s.users[key] = user
}

func (s *sessions) user(key string) (string, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u, ok := s.users[key]
	return u, ok
}

// accountsLogin is the login check: the administrator's password or an account's, each read from
// the environment variable the configuration names.
func accountsLogin(cfg *Config, adminPassword string) (func(*types.Login) bool, error) {
	passwords := map[string]string{cfg.Username: adminPassword}
	for _, a := range cfg.Accounts {
		p := os.Getenv(a.PasswordEnv)
		if p == "" {
			return nil, fmt.Errorf("account %s: environment variable %s is empty", a.Username, a.PasswordEnv)
		}
		passwords[a.Username] = p
	}
	return func(req *types.Login) bool {
		p, ok := passwords[req.UserName]
		return ok && req.Password != "" && req.Password == p
	}, nil
}

func (s *Sim) account(user string) *Account {
	for i := range s.cfg.Accounts {
		if s.cfg.Accounts[i].Username == user {
			return &s.cfg.Accounts[i]
		}
	}
	return nil
}

// granted is whether user holds priv: the administrator holds every privilege.
func (s *Sim) granted(user, priv string) bool {
	a := s.account(user)
	return a == nil || slices.Contains(a.Privileges, priv)
}

// refusal is the NoPermission an account gets for a method its role lacks (nil: allowed).
func (s *Sim) refusal(ctx *simulator.Context, m *simulator.Method) types.BaseMethodFault {
	if ctx.Session == nil || s.account(ctx.Session.UserName) == nil {
		return nil
	}
	id, ok := methodPrivileges[m.Name]
	if !ok {
		return nil
	}
	need := []string{fact(id)}
	if m.Name == "RelocateVM_Task" && s.vmOn(m.This) {
		need = append(need, fact("privilege.RelocateVM_Task.powered_on"))
	}
	for _, priv := range need {
		if !s.granted(ctx.Session.UserName, priv) {
			// object and privilegeId: every API version has them; missingPrivileges came with
			// 7.0.3.2, newer than the version the simulator negotiates (pyVmomi would not parse it).
			return &types.NoPermission{Object: &m.This, PrivilegeId: priv}
		}
	}
	return nil
}

func (s *Sim) vmOn(ref types.ManagedObjectReference) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	vm := s.vms[s.vmName(ref)]
	return vm != nil && vm.on
}

// authz answers privilege questions from the role of the session (or user) asked about.
type authz struct {
	Self types.ManagedObjectReference
	sim  *Sim
}

func (a *authz) Reference() types.ManagedObjectReference { return a.Self }

func (a *authz) availability(user string, privs []string) []types.PrivilegeAvailability {
	out := make([]types.PrivilegeAvailability, 0, len(privs))
	for _, p := range privs {
		out = append(out, types.PrivilegeAvailability{PrivId: p, IsGranted: a.sim.granted(user, p)})
	}
	return out
}

// sessionUser is the user of the session a privilege question names, or the refusal of a sessionId
// that is no session.
func (a *authz) sessionUser(id string) (string, *soap.Fault) {
	user, ok := a.sim.sessions.user(id)
	if !ok && fact("privilege.session_unknown") == "InvalidArgument" {
		return "", simulator.Fault("", &types.InvalidArgument{InvalidProperty: "sessionId"})
	}
	return user, nil
}

func (a *authz) HasPrivilegeOnEntities(req *types.HasPrivilegeOnEntities) soap.HasFault {
	body := &methods.HasPrivilegeOnEntitiesBody{}
	user, refused := a.sessionUser(req.SessionId)
	if refused != nil {
		body.Fault_ = refused
		return body
	}
	res := &types.HasPrivilegeOnEntitiesResponse{}
	for _, e := range req.Entity {
		res.Returnval = append(res.Returnval, types.EntityPrivilege{Entity: e, PrivAvailability: a.availability(user, req.PrivId)})
	}
	body.Res = res
	return body
}

func (a *authz) HasPrivilegeOnEntity(req *types.HasPrivilegeOnEntity) soap.HasFault {
	body := &methods.HasPrivilegeOnEntityBody{}
	user, refused := a.sessionUser(req.SessionId)
	if refused != nil {
		body.Fault_ = refused
		return body
	}
	res := &types.HasPrivilegeOnEntityResponse{}
	for _, p := range a.availability(user, req.PrivId) {
		res.Returnval = append(res.Returnval, p.IsGranted)
	}
	body.Res = res
	return body
}

func (a *authz) HasUserPrivilegeOnEntities(req *types.HasUserPrivilegeOnEntities) soap.HasFault {
	res := &types.HasUserPrivilegeOnEntitiesResponse{}
	for _, e := range req.Entities {
		res.Returnval = append(res.Returnval, types.EntityPrivilege{Entity: e, PrivAvailability: a.availability(req.UserName, req.PrivId)})
	}
	return &methods.HasUserPrivilegeOnEntitiesBody{Res: res}
}

// authzFor routes the privilege questions to authz (nil for any other method).
func (s *Sim) authzFor(m *simulator.Method) mo.Reference {
	switch m.Name {
	case "HasPrivilegeOnEntities", "HasPrivilegeOnEntity", "HasUserPrivilegeOnEntities":
		return &authz{Self: m.This, sim: s}
	}
	return nil
}
