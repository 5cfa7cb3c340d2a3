package migrate

import (
	"bytes"
	"context"
	"fmt"
	"log"
)

// Migrate re-encodes every object at the storage version, then prunes
// storedVersions. (The client here is a fake API server; use
// dynamic.NewForConfig against a cluster.)
func ExampleMigrate() {
	api := newFakeAPI("v1", []string{"v1alpha1", "v1"}, "v1alpha1", "v1")
	api.add("default", 3, "v1alpha1")

	res, err := Migrate(context.Background(), Options{
		CRD:    "widgets.example.com",
		Client: api.client(),
		Prune:  true,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d rewritten, %d already current\n", res.Rewritten, res.Unchanged)
	fmt.Println(res.PruneMessage)
	// Output:
	// 3 rewritten, 0 already current
	// storedVersions set to [v1] (dropped [v1alpha1])
}

// WriteBackup saves every object with checksums; ReadBackup verifies them
// and Restore writes the objects back, idempotently.
func ExampleRestore() {
	api := newFakeAPI("v1", []string{"v1"}, "v1")
	api.add("default", 2, "v1")
	client := api.client()
	ctx := context.Background()

	var file bytes.Buffer
	if _, err := WriteBackup(ctx, &file, BackupOptions{CRD: "widgets.example.com", Client: client}); err != nil {
		log.Fatal(err)
	}
	delete(api.objs, "default/w-001") // lost

	b, err := ReadBackup(&file)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d objects verified\n", len(b.Objects))
	res, err := Restore(ctx, b, RestoreOptions{Client: client})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%d created, %d unchanged\n", res.Created, res.Unchanged)
	// Output:
	// 2 objects verified
	// 1 created, 1 unchanged
}
