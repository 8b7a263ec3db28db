package localcluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestConfigCheck(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{etcdBin, apiServerBin, controllerManagerBin, schedulerBin, "kwok", metricsServerBin} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stages := filepath.Join(dir, "stages.yaml")
	if err := os.WriteFile(stages, []byte(stageYAML("n", "Node")+"---\n"+stageYAML("p", "Pod")), 0o644); err != nil {
		t.Fatal(err)
	}
	metrics := filepath.Join(dir, "metrics.yaml")
	if err := os.WriteFile(metrics, []byte(kwokConfigYAML("ClusterResourceUsage", "")+"---\n"+kwokConfigYAML("Metric", resourceMetricsPathPattern)), 0o644); err != nil {
		t.Fatal(err)
	}
	good := Config{Dir: dir, K8sBinDir: bin, Kwok: filepath.Join(bin, "kwok"), KwokStages: stages, KwokMetrics: metrics,
		MetricsServer: filepath.Join(bin, metricsServerBin), Nodes: 1}
	if err := good.check(); err != nil {
		t.Fatalf("check: %v", err)
	}
	tests := []struct {
		name    string
		edit    func(*Config)
		wantErr string
	}{
		{name: "no nodes", edit: func(c *Config) { c.Nodes = 0 }, wantErr: "0 Nodes"},
		{name: "no dir", edit: func(c *Config) { c.Dir = "" }, wantErr: "no directory"},
		{name: "missing binary", edit: func(c *Config) { c.K8sBinDir = dir }, wantErr: "binary " + filepath.Join(dir, "etcd") + " not found: `make bin/k8s/etcd` builds it"},
		{name: "missing kwok", edit: func(c *Config) { c.Kwok = filepath.Join(dir, "nokwok") }, wantErr: "`make kwok` builds it"},
		{name: "kwok not executable", edit: func(c *Config) { c.Kwok = stages }, wantErr: "is not an executable file"},
		{name: "missing stages", edit: func(c *Config) { c.KwokStages = filepath.Join(dir, "none.yaml") }, wantErr: "`make kwok` writes them"},
		{name: "bad stages", edit: func(c *Config) { c.KwokStages = filepath.Join(bin, "kwok") }, wantErr: "kwok stages"},
		{name: "missing metrics-server", edit: func(c *Config) { c.MetricsServer = filepath.Join(dir, "none") }, wantErr: "`make metrics-server` builds it"},
		{name: "missing kwok metrics", edit: func(c *Config) { c.KwokMetrics = filepath.Join(dir, "none.yaml") }, wantErr: "`make kwok` writes it"},
		{name: "stages as kwok metrics", edit: func(c *Config) { c.KwokMetrics = stages }, wantErr: "kwok metrics configuration"},
		{name: "missing CRDs", edit: func(c *Config) { c.CRDDir = filepath.Join(dir, "crds") }, wantErr: "CRD directory"},
		{name: "missing kwok configuration", edit: func(c *Config) { c.KwokConfigs = []string{filepath.Join(dir, "none.yaml")} }, wantErr: "reading kwok configuration"},
		{name: "bad kwok configuration", edit: func(c *Config) { c.KwokConfigs = []string{filepath.Join(bin, "kwok")} }, wantErr: "kwok configuration " + filepath.Join(bin, "kwok")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := good
			tt.edit(&cfg)
			err := cfg.check()
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("check error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
