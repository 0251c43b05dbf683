// Command kwok-stages prints kwok's default node and pod Stages, the ones kwokctl's binary runtime
// applies to a cluster whose configuration names no Stage, as a multi-document YAML stream, read
// at run time from kwok's own Go module (sigs.k8s.io/kwok/kustomize/stage/...); nothing of them is
// copied into this repository.
//
// kwokctl applies the Stages its configuration names instead of all of its defaults, so a cluster
// that wants all but one default names the rest: `kwok-stages --without pod-complete`, appended to
// the kwokctl configuration, keeps a Job's pods Running until they are deleted (as KAI's own scale
// setup configures kwok, by deleting the pod-complete Stage).
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"
	"strings"

	nodefast "sigs.k8s.io/kwok/kustomize/stage/node/fast"
	nodeheartbeatwithlease "sigs.k8s.io/kwok/kustomize/stage/node/heartbeat-with-lease"
	podfast "sigs.k8s.io/kwok/kustomize/stage/pod/fast"
	"sigs.k8s.io/yaml"
)

const kwokModule = "sigs.k8s.io/kwok"

// source is the SHA-256 prefix of this file, set at build time (build.sh rebuilds when it changes).
var source = "unknown"

// defaults are kwokctl's default Stages for its binary runtime, in kwokctl's order: the node's
// initialization and its heartbeat with a Lease (kwokctl's node lease duration defaults to 40 s),
// then the pod's ready, complete and delete Stages.
var defaults = []string{
	nodefast.DefaultNodeInit,
	nodeheartbeatwithlease.DefaultNodeHeartbeatWithLease,
	podfast.DefaultPodReady,
	podfast.DefaultPodComplete,
	podfast.DefaultPodDelete,
}

// kwokVersion reports the kwok module version linked into this binary.
func kwokVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == kwokModule {
				return d.Version
			}
		}
	}
	return "unknown"
}

// stageName is the metadata.name of one Stage document.
func stageName(doc string) (string, error) {
	var stage struct {
		Kind     string `json:"kind"`
		Metadata struct {
			Name string `json:"name"`
		} `json:"metadata"`
	}
	if err := yaml.Unmarshal([]byte(doc), &stage); err != nil {
		return "", err
	}
	if stage.Kind != "Stage" || stage.Metadata.Name == "" {
		return "", fmt.Errorf("not a named Stage: kind %q, name %q", stage.Kind, stage.Metadata.Name)
	}
	return stage.Metadata.Name, nil
}

func run() error {
	showVersion := flag.Bool("version", false, "print the kwok module version and exit")
	without := flag.String("without", "", "comma-separated names of default Stages to leave out (e.g. pod-complete)")
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *showVersion {
		fmt.Printf("kwok-stages %s %s source %s\n", kwokModule, kwokVersion(), source)
		return nil
	}
	left := map[string]bool{}
	for _, name := range strings.Split(*without, ",") {
		if name = strings.TrimSpace(name); name != "" {
			left[name] = true
		}
	}
	var names []string
	var out strings.Builder
	for _, doc := range defaults {
		name, err := stageName(doc)
		if err != nil {
			return err
		}
		names = append(names, name)
		if left[name] {
			delete(left, name)
			continue
		}
		fmt.Fprintf(&out, "---\n%s\n", strings.TrimSpace(doc))
	}
	if len(left) > 0 {
		unknown := make([]string, 0, len(left))
		for name := range left {
			unknown = append(unknown, name)
		}
		sort.Strings(unknown)
		return fmt.Errorf("--without names no default Stage: %s (the defaults: %s)",
			strings.Join(unknown, ", "), strings.Join(names, ", "))
	}
	_, err := fmt.Print(out.String())
	return err
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kwok-stages: %v\n", err)
		os.Exit(1)
	}
}
