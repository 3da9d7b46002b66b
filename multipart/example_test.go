package multipart_test

import (
	"errors"
	"fmt"

	"github.com/safeput/safeput/multipart"
)

// A profile is a provider's multipart rules as data; Plan sizes the parts within them.
func ExampleProfile() {
	r2, err := multipart.Profile("r2")
	if err != nil {
		fmt.Println(err)
		return
	}
	plan, err := r2.Plan(multipart.PlanRequest{Size: 100 << 30, PartSize: 16 << 20, Concurrency: 4})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d MiB %d\n", plan.PartSize>>20, plan.Parts)
	// Output: 16 MiB 6400
}

// A rules string adjusts a profile; a part size the rules forbid is an error that names the rule.
func ExampleParse() {
	rules, err := multipart.Parse("profile=aws,min=8MiB")
	if err != nil {
		fmt.Println(err)
		return
	}
	_, err = rules.Plan(multipart.PlanRequest{Size: 1 << 30, PartSize: 5 << 20, Concurrency: 4})
	var re *multipart.RuleError
	fmt.Printf("%v %d MiB\n", errors.As(err, &re), rules.MinPartSize>>20)
	// Output: true 8 MiB
}
