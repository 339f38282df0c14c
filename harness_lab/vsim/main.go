// Command harness-vsim is a vSAN-aware vCenter simulator for a stretched
// cluster: the govmomi simulator plus host power loss and HA restart, vSAN
// disk faults, object placement and resync, served to vim and vSAN clients.
package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/vmware/govmomi/vsan"
)

func main() {
	configPath := flag.String("config", "", "configuration file (JSON)")
	listFacts := flag.Bool("facts", false, "print the provenance table of what the simulator serves (JSON) and exit")
	flag.Parse()
	logger := log.New(os.Stderr, "harness-vsim: ", log.LstdFlags|log.Lmicroseconds)
	if *listFacts {
		if err := json.NewEncoder(os.Stdout).Encode(facts); err != nil {
			logger.Fatal(err)
		}
		return
	}
	if *configPath == "" {
		logger.Fatal("-config is required")
	}
	if err := run(*configPath, logger); err != nil {
		logger.Fatal(err)
	}
}

func run(configPath string, logger *log.Logger) error {
	// Caught from the start, so a stop during start-up still cleans up.
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	cfg, err := LoadConfig(configPath)
	if err != nil {
		return err
	}
	password := os.Getenv(cfg.PasswordEnv)
	if password == "" {
		return fmt.Errorf("environment variable %s (password_env) is empty", cfg.PasswordEnv)
	}
	var tlsConfig *tls.Config
	if cfg.TLS != nil {
		cert, err := tls.LoadX509KeyPair(cfg.TLS.Cert, cfg.TLS.Key)
		if err != nil {
			return fmt.Errorf("tls: %w", err)
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	}

	sim, err := NewSim(cfg, logger)
	if err != nil {
		return err
	}
	defer sim.Close()

	svc := sim.svc
	svc.Listen = &url.URL{Host: cfg.Listen, User: url.UserPassword(cfg.Username, password)}
	svc.TLS = tlsConfig
	if sim.reg.SessionManager().ValidLogin, err = accountsLogin(cfg, password); err != nil {
		return err
	}
	svc.RegisterSDK(sim.vsanRegistry())
	svc.RegisterSDK(sim.pbmRegistry())
	// More specific than the simulator's own "/vsanHealth" pattern, so it runs first.
	svc.ServeMux.HandleFunc("POST "+vsan.Path, guardVsanEndpoint(svc.ServeSDK))
	svc.ServeMux.HandleFunc("GET /sdk/vsanServiceVersions.xml", serveVsanVersions)
	server := svc.NewServer()
	defer server.Close()

	control, err := net.Listen("tcp", cfg.ControlListen)
	if err != nil {
		return err
	}
	controlServer := &http.Server{Handler: sim.ControlHandler(), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = controlServer.Serve(control) }()
	defer func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = controlServer.Shutdown(ctx)
	}()

	sim.Tick(200 * time.Millisecond)
	sdk := url.URL{Scheme: server.URL.Scheme, Host: server.URL.Host, Path: "/sdk"}
	ready := map[string]any{"sdk": sdk.String(), "control": "http://" + control.Addr().String(), "pid": os.Getpid()}
	if err := writeAtomically(cfg.ReadyFile, ready); err != nil {
		return err
	}
	logger.Printf("ready: sdk %s, control http://%s", sdk.String(), control.Addr())

	sig := <-stop
	logger.Printf("stopping on %s", sig)
	return nil
}

func writeAtomically(path string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".ready-*")
	if err != nil {
		return err
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		_ = tmp.Close()
		_ = os.Remove(tmp.Name())
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
