.PHONY: test lint demo bench
test:
	bash scripts/test.sh
lint:
	bash scripts/lint.sh
demo:
	go run ./cmd/safeput demo
bench:
	bash scripts/bench.sh
