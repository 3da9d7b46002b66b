module github.com/safeput/safeput/examples

go 1.26

replace github.com/safeput/safeput => ..
