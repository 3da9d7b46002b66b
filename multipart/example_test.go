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
	fmt.Println(multipart.FormatSize(plan.PartSize), plan.Parts)
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
	fmt.Println(errors.As(err, &re), multipart.FormatSize(rules.MinPartSize))
	// Output: true 8 MiB
}
