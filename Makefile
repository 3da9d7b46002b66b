.PHONY: test test-quick lint demo bench campaign fault-schedules
test:
	bash scripts/test.sh
test-quick:
	bash scripts/test-quick.sh
lint:
	bash scripts/lint.sh
demo:
	go run ./cmd/safeput demo
bench:
	bash scripts/bench.sh
# The seeded campaigns at more than the test command's size, and more kills: for a change to
# the writer's fault handling.
campaign:
	SAFEPUT_CAMPAIGN_UPLOADS=200 SAFEPUT_WIRE_UPLOADS=112 SAFEPUT_KILL_RUNS=50 bash scripts/with-s3.sh bash -c \
		'go test -race -count=1 -timeout 60m -parallel 12 -run "^(TestCampaign|TestWireCampaign)$$" ./writer/ && \
		cd cmd/safeput && go test -race -count=1 -timeout 60m -run "^TestKillAnywhere$$" .'
# At least a thousand writes, each with a random fault schedule drawn from its own seed, across
# the servers (SAFEPUT_S3_START) and both adapters; the figures go into docs/fault-campaign.md.
fault-schedules:
	SAFEPUT_SCHEDULE_WRITES=$${SAFEPUT_SCHEDULE_WRITES:-1008} SAFEPUT_SCHEDULE_DOC=$(CURDIR)/docs/fault-campaign.md \
		bash scripts/with-s3.sh go test -race -count=1 -timeout 150m -parallel 12 -run '^TestFaultSchedules$$' ./writer/
