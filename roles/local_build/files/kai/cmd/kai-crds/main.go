// Command kai-crds prints the CustomResourceDefinitions that KAI-scheduler embeds
// in github.com/kai-scheduler/KAI-scheduler/deployments/kai-scheduler/crds, as a
// multi-document YAML stream suitable for `kai-crds | kubectl apply -f -`.
//
// The CRDs are read at run time from the KAI-scheduler module pinned in go.mod;
// they are never copied into this repository.
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime/debug"
	"sort"

	kaicrds "github.com/kai-scheduler/KAI-scheduler/deployments/kai-scheduler/crds"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"
)

const kaiModule = "github.com/kai-scheduler/KAI-scheduler"

// kaiVersion reports the KAI-scheduler module version linked into this binary.
func kaiVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path != kaiModule {
			continue
		}
		if d.Replace != nil {
			return fmt.Sprintf("%s (replaced by %s %s)", d.Version, d.Replace.Path, d.Replace.Version)
		}
		return d.Version
	}
	return "unknown"
}

func run() error {
	showVersion := flag.Bool("version", false, "print the KAI-scheduler version and exit")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: %s [--version]\n\n"+
			"Prints KAI-scheduler's CRDs as a multi-document YAML stream.\n", os.Args[0])
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 0 {
		flag.Usage()
		os.Exit(2)
	}
	if *showVersion {
		fmt.Printf("kai-crds %s %s\n", kaiModule, kaiVersion())
		return nil
	}

	crds, err := kaicrds.LoadEmbeddedCRDs()
	if err != nil {
		return fmt.Errorf("loading embedded KAI CRDs: %w", err)
	}
	if len(crds) == 0 {
		return fmt.Errorf("no CRDs embedded in %s", kaiModule)
	}
	sort.Slice(crds, func(i, j int) bool { return crds[i].Name < crds[j].Name })

	out := os.Stdout
	for _, crd := range crds {
		crd.APIVersion = apiextensionsv1.SchemeGroupVersion.String()
		crd.Kind = "CustomResourceDefinition"
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(crd)
		if err != nil {
			return fmt.Errorf("converting CRD %s: %w", crd.Name, err)
		}
		// Server-populated fields are not part of a manifest.
		delete(obj, "status")
		if md, ok := obj["metadata"].(map[string]interface{}); ok {
			delete(md, "creationTimestamp")
		}
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("marshalling CRD %s: %w", crd.Name, err)
		}
		if _, err := fmt.Fprintf(out, "---\n%s", data); err != nil {
			return err
		}
	}
	return nil
}

func main() {
	if err := run(); err != nil {
		fmt.Fprintf(os.Stderr, "kai-crds: %v\n", err)
		os.Exit(1)
	}
}
