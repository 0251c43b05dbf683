// Command etcd is etcd's server, built from the go.etcd.io/etcd/server/v3 module
// pinned in go.mod. `go install go.etcd.io/etcd/server/v3@vX` does not work
// because that module's go.mod has replace directives, hence this wrapper.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
