// The consumer's own header named like one of staticlm's internal ones.
#pragma once
#define CONSUMER_OWN_MODEL_HEADER 1
