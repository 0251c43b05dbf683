// Wrapper module for KAI-scheduler: kai-crds (cmd/kai-crds) now, KAI's own
// commands (scheduler, binder, admission, ...) later, built with
// `go build github.com/kai-scheduler/KAI-scheduler/cmd/<name>` from this directory.
// Version pinned in versions.env (KAI_VERSION); after a bump run build.sh --sync
// (and re-check the replace lines below).

module sim-bin/kai

go 1.26.3

require (
	github.com/kai-scheduler/KAI-scheduler v0.16.0
	k8s.io/apiextensions-apiserver v0.35.4
	k8s.io/apimachinery v0.35.4
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/fxamacker/cbor/v2 v2.9.0 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/json-iterator/go v1.1.12 // indirect
	github.com/modern-go/concurrent v0.0.0-20180306012644-bacd9c7ef1dd // indirect
	github.com/modern-go/reflect2 v1.0.3-0.20250322232337-35a7c28c31ee // indirect
	github.com/x448/float16 v0.8.4 // indirect
	go.yaml.in/yaml/v2 v2.4.3 // indirect
	golang.org/x/net v0.52.0 // indirect
	golang.org/x/text v0.35.0 // indirect
	gopkg.in/inf.v0 v0.9.1 // indirect
	k8s.io/klog/v2 v2.140.0 // indirect
	k8s.io/kube-openapi v0.0.0-20250910181357-589584f1c912 // indirect
	k8s.io/utils v0.0.0-20260319190234-28399d86e0b5 // indirect
	sigs.k8s.io/json v0.0.0-20250730193827-2d320260d730 // indirect
	sigs.k8s.io/randfill v1.0.0 // indirect
	sigs.k8s.io/structured-merge-diff/v6 v6.3.2-0.20260122202528-d9cc6641c482 // indirect
)

// KAI-scheduler's own replace directives (Go ignores a dependency's replaces).
replace (
	k8s.io/api => k8s.io/api v0.35.4
	k8s.io/apimachinery => k8s.io/apimachinery v0.35.4
)

// The Go module proxy here serves no version of github.com/kai-scheduler/KAI-scheduler; the
// one copy it serves is v0.16.0 under the old path (a zip declaring the new module path, whose
// go.mod build.sh extracts; go.sum pins both hashes, as sum.golang.org has them).
replace github.com/kai-scheduler/KAI-scheduler v0.16.0 => github.com/NVIDIA/KAI-scheduler v0.16.0
