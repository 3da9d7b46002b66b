module github.com/safeput/safeput/cmd/safeput

go 1.26

replace github.com/safeput/safeput => ../..
