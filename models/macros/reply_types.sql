-- Which reply_type values count as a positive reply (the API does not list its values;
-- see models/README.md, "Positive replies"). Unknown values count as not positive.
create or replace macro reporting.is_positive_reply(reply_type) as (
    coalesce(lower(reply_type) in ('interested', 'meeting_booked', 'meeting_request', 'positive'), false)
);
