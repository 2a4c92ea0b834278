-- Every duration is >= 0: nothing is answered before it was sent (rows = negative durations).
select campaign_id, first_sent_at, first_reply_at, hours_to_first_reply, median_hours_to_reply
from {{ ref('campaign_performance') }}
where hours_to_first_reply < 0 or median_hours_to_reply < 0
    or first_sent_at > first_reply_at
