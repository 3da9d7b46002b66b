module github.com/safeput/safeput/bench

go 1.26

replace github.com/safeput/safeput => ..
