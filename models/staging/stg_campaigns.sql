-- one row per campaign the API still returns (current scd2 version)
select * exclude (is_current, valid_to_at)
from reporting.stg_campaign_history
where is_current
